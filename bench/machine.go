package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// machine records where and on what a run happened.
type machine struct {
	CPU        string            `json:"cpu"`
	Cores      int               `json:"cores"`
	GOMAXPROCS int               `json:"gomaxprocs"`
	GoVersion  string            `json:"go_version"`
	OS         string            `json:"os"`
	Kernel     string            `json:"kernel"`
	Caches     string            `json:"caches,omitempty"` // per level, from sysfs
	MemTotal   string            `json:"mem_total"`
	THP        string            `json:"thp"` // transparent huge pages setting
	LoadBefore string            `json:"load_before"`
	LoadAfter  string            `json:"load_after"`
	Date       string            `json:"date"`
	Commit     string            `json:"commit"` // this repository's HEAD
	Dirty      []string          `json:"dirty"`  // uncommitted files outside bench/ and docs/ when measured
	Modules    map[string]string `json:"modules"`
}

func describeMachine() machine {
	m := machine{
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		Kernel:     firstLine("/proc/sys/kernel/osrelease"),
		THP:        firstLine("/sys/kernel/mm/transparent_hugepage/enabled"),
		LoadBefore: loadAverage(),
		Date:       time.Now().UTC().Format("2006-01-02 15:04 MST"),
		Modules:    map[string]string{},
	}
	m.CPU = procField("/proc/cpuinfo", "model name")
	m.MemTotal = procField("/proc/meminfo", "MemTotal")
	m.Caches = caches()
	if out, err := exec.Command("git", "-C", "..", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "-C", "..", "status", "--porcelain", "--", ".", ":!bench", ":!docs").Output(); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				m.Dirty = append(m.Dirty, strings.TrimSpace(l))
			}
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			m.Modules[d.Path] = d.Version
		}
	}
	return m
}

func loadAverage() string {
	f := strings.Fields(firstLine("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func firstLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line)
}

// procField returns the value of the first "key : value" line of path.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// caches describes cpu0's caches: "L1d 48K, L1i 32K, L2 2048K, L3 36608K".
func caches() string {
	var out []string
	for i := 0; i < 8; i++ {
		dir := "/sys/devices/system/cpu/cpu0/cache/index" + string(rune('0'+i)) + "/"
		level, size := firstLine(dir+"level"), firstLine(dir+"size")
		if level == "" || size == "" {
			break
		}
		name := "L" + level
		switch firstLine(dir + "type") {
		case "Data":
			name += "d"
		case "Instruction":
			name += "i"
		}
		out = append(out, name+" "+size)
	}
	return strings.Join(out, ", ")
}

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }
