package lint

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository stands alone: no file of it names a path outside it (a
// sibling checkout, a machine's home or work directory) or a file of it
// that does not exist. The checks are precise rather than broad, so that
// they never cry wolf:
//
//   - anywhere: a relative path that climbs out of the repository from the
//     file's directory (../x in a top-level file), and absolute paths under
//     the work tree, /home/, /root/ or /Users/ where a path starts (not
//     inside a URL), which name a machine, not the repository (/tmp/,
//     /usr/bin/ and /etc/ are the same on every machine, and examples use
//     them);
//   - anywhere: a document named in capitals (PLAN.md, say) that
//     the repository does not hold, and a docs/NAME.md (or .svg) that is
//     not there;
//   - in Markdown: every relative link [text](target), with its #anchor
//     when the target is a Markdown file (GitHub's heading slugs), and
//     every `backticked` path whose first element is a top-level entry of
//     the repository (`cmd/cuckoo/serve.go`, `docs/`), which must exist.

// repoFile is one file of the repository: its path (slash-separated,
// relative to the root) and its contents.
type repoFile struct {
	path string
	data []byte
}

// repoFiles returns the repository's files: those git tracks, or, outside
// a git checkout, every file under the root but .git; binary files (a
// NUL in their first 8 KiB) are left out.
func repoFiles(t *testing.T, root string) []repoFile {
	t.Helper()
	var names []string
	if out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output(); err == nil && len(out) > 0 {
		for _, n := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			names = append(names, n)
		}
	} else {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				rel, _ := filepath.Rel(root, p)
				names = append(names, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var files []repoFile
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(n)))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet in git's index
			}
			t.Fatal(err)
		}
		if bytes.IndexByte(b[:min(len(b), 8192)], 0) >= 0 {
			continue
		}
		files = append(files, repoFile{n, b})
	}
	return files
}

var (
	// machinePath is an absolute path of one machine, where a path
	// starts: at the start of a line or after a blank, a quote, a
	// bracket or "=".
	machinePath = regexp.MustCompile("(?:^|[\\s\"'`(\\[<=,])(/(?:work|home|root|Users)/[^\\s\"'`)\\]>,]*)")
	// upPath is a relative path that begins by climbing, where a path
	// starts: ../x, ../../x.
	upPath = regexp.MustCompile("(?:^|[\\s\"'`(\\[<=,])((?:\\.\\./)+[\\w.-]+)")
	// capitalDoc is a document named in capitals: PLAN.md.
	capitalDoc = regexp.MustCompile(`\b[A-Z][A-Z0-9_-]+\.md\b`)
	// docsFile is a file of docs/ named from anywhere.
	docsFile = regexp.MustCompile(`(?:^|[^\w./-])(docs/[\w.-]+\.(?:md|svg))`)
	// mdLink is a Markdown link or image: [text](target).
	mdLink = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	// backticked is a code span on one line.
	backticked = regexp.MustCompile("`([^`\\s]+)`")
)

// selfExempt is this file, which names the patterns it looks for.
const selfExempt = "internal/lint/paths_test.go"

// TestNoPathOutsideTheRepository fails when a file names a path outside
// the repository or a document of it that does not exist.
func TestNoPathOutsideTheRepository(t *testing.T) {
	root := repoRoot(t)
	files := repoFiles(t, root)
	bases := map[string]bool{}
	for _, f := range files {
		bases[path.Base(f.path)] = true
	}
	for _, f := range files {
		if f.path == selfExempt {
			continue
		}
		for i, line := range strings.Split(string(f.data), "\n") {
			for _, problem := range outsidePaths(line, path.Dir(f.path), bases, func(p string) bool {
				return exists(root, p) || exists(root, path.Join(path.Dir(f.path), p))
			}) {
				t.Errorf("%s:%d: %s", f.path, i+1, problem)
			}
		}
	}
}

// outsidePaths returns what is wrong with one line of a file: each path it
// names outside the repository, and each document it names that the
// repository does not hold (dir is the file's directory, relative to the
// root; bases are the base names of its files; found says whether a docs/
// path exists).
func outsidePaths(line, dir string, bases map[string]bool, found func(string) bool) []string {
	var problems []string
	for _, m := range machinePath.FindAllStringSubmatch(line, -1) {
		problems = append(problems, m[1]+" is a path on one machine, outside the repository")
	}
	for _, m := range upPath.FindAllStringSubmatch(line, -1) {
		if p := path.Join(dir, m[1]); p == ".." || strings.HasPrefix(p, "../") {
			problems = append(problems, m[1]+" points outside the repository")
		}
	}
	for _, m := range capitalDoc.FindAllString(line, -1) {
		if !bases[m] {
			problems = append(problems, m+" is not a file of the repository")
		}
	}
	for _, m := range docsFile.FindAllStringSubmatch(line, -1) {
		if !found(m[1]) {
			problems = append(problems, m[1]+" does not exist")
		}
	}
	return problems
}

// TestOutsidePaths pins what outsidePaths finds, and what it leaves
// alone.
func TestOutsidePaths(t *testing.T) {
	bases := map[string]bool{"README.md": true}
	found := func(p string) bool { return p == "docs/cli.md" }
	for _, c := range []struct {
		line string
		n    int
	}{
		{"see /home/me/notes/PLAN.md", 2},
		{"cd /home/me/cuckoo", 1},
		{"`/root/go/bin/cuckoo`", 1},
		{"(../notes/GUIDE.md)", 2},
		{"../x.md", 1},
		{"PLAN.md says", 1},
		{"docs/nope.md and docs/cli.md", 1},
		{"README.md, docs/cli.md", 0},
		{"https://example.com/home/page and http://x/home/y", 0},
		{"/tmp/cuckoo dedup /tmp/urls.txt; /usr/bin/time -v; /etc/cuckoo/serve.conf", 0},
		{"bench/docs/x.md", 0}, // not docs/ of the root
	} {
		if got := outsidePaths(c.line, ".", bases, found); len(got) != c.n {
			t.Errorf("%q: %v, want %d problems", c.line, got, c.n)
		}
	}
	// A climb is judged from the file's directory.
	for _, c := range []struct {
		dir, line string
		n         int
	}{
		{"internal/lint", "(../README.md), \"../..\"", 0},
		{"internal/lint", "../../../x", 1},
		{"bench", "replace github.com/dedupkit/cuckoo => ../", 0},
	} {
		if got := outsidePaths(c.line, c.dir, bases, found); len(got) != c.n {
			t.Errorf("%s: %q: %v, want %d problems", c.dir, c.line, got, c.n)
		}
	}
}

// TestMarkdownPathsExist fails when a Markdown file links to, or names in
// backticks, a path of the repository that does not exist, or links to a
// heading a Markdown file does not have.
func TestMarkdownPathsExist(t *testing.T) {
	root := repoRoot(t)
	top := map[string]bool{} // the top-level entries
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "." && e.Name() != ".." {
			top[e.Name()] = true
		}
	}
	anchors := map[string]map[string]bool{} // Markdown file → its heading slugs
	slugsOf := func(p string) map[string]bool {
		if s, ok := anchors[p]; ok {
			return s
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return nil
		}
		anchors[p] = headingSlugs(string(b))
		return anchors[p]
	}
	checked := 0
	for _, f := range repoFiles(t, root) {
		if !strings.HasSuffix(f.path, ".md") {
			continue
		}
		dir := path.Dir(f.path)
		inFence := false
		for i, line := range strings.Split(string(f.data), "\n") {
			at := fmt.Sprintf("%s:%d", f.path, i+1)
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			if inFence {
				continue // code: commands and output, checked by running them
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				file, _, _ = strings.Cut(file, "?")
				p := f.path
				if file != "" {
					p = path.Join(dir, file)
					checked++
					if !exists(root, p) {
						t.Errorf("%s: link to %s: %s does not exist", at, target, p)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(p, ".md") && !slugsOf(p)[anchor] {
					t.Errorf("%s: link to %s: %s has no heading #%s", at, target, p, anchor)
				}
			}
			for _, m := range backticked.FindAllStringSubmatch(line, -1) {
				p := repoPath(m[1], top)
				if p == "" {
					continue
				}
				checked++
				if !exists(root, p) && !exists(root, path.Join(dir, p)) {
					t.Errorf("%s: `%s` names a path of the repository that does not exist", at, m[1])
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d paths checked: is the walk rooted at the repository?", checked)
	}
}

// repoPath returns the path a code span names in the repository, or ""
// when it is not one: a span of path characters whose first element is a
// top-level entry of the repository and that holds a "/" (`docs/cli.md`,
// `cmd/cuckoo/`), without globs, placeholders or a Go import path.
func repoPath(span string, top map[string]bool) string {
	span = strings.TrimPrefix(span, "./")
	if !strings.Contains(span, "/") || strings.ContainsAny(span, "*?{}<>$|=,:;()[]") || strings.Contains(span, "...") {
		return ""
	}
	first, _, _ := strings.Cut(span, "/")
	if !top[first] {
		return ""
	}
	span = strings.TrimSuffix(span, "/")
	// A package and a name in it: `internal/addr.Spread`.
	dir, last := path.Split(span)
	if pkg, name, ok := strings.Cut(last, "."); ok && name != "" && name[0] >= 'A' && name[0] <= 'Z' {
		return dir + pkg
	}
	return span
}

// headingSlugs returns the anchors GitHub makes of a Markdown file's
// headings: lower case, code spans' backticks and punctuation dropped
// (but "-" and "_"), blanks as "-", a repeated slug numbered -1, -2, ….
func headingSlugs(md string) map[string]bool {
	slugs := map[string]bool{}
	count := map[string]int{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		s := b.String()
		if n := count[s]; n > 0 {
			slugs[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			slugs[s] = true
		}
		count[s]++
	}
	return slugs
}

// exists reports whether the slash-separated path p, relative to root,
// is a file or directory of the work tree.
func exists(root, p string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
	return err == nil
}

// repoRoot returns the repository's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestHeadingSlugs pins the slugs of headings the documents link to.
func TestHeadingSlugs(t *testing.T) {
	got := headingSlugs("# Title\n## Exact dedup: `--exact`\n### Time windows (an extension)\n## Compatibility with Redis 8\n```\n# not a heading\n```\n## Title\n")
	for _, want := range []string{"title", "exact-dedup---exact", "time-windows-an-extension", "compatibility-with-redis-8", "title-1"} {
		if !got[want] {
			t.Errorf("no slug %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line in a code block taken for a heading")
	}
}

// TestRepoPath pins which code spans name a path of the repository.
func TestRepoPath(t *testing.T) {
	top := map[string]bool{"docs": true, "cmd": true, "internal": true}
	for span, want := range map[string]string{
		"docs/cli.md":            "docs/cli.md",
		"./cmd/cuckoo/":          "cmd/cuckoo",
		"internal/addr.Spread":   "internal/addr",
		"internal/vfs/fs.go":     "internal/vfs/fs.go",
		"docs/*.md":              "",
		"cmd/cuckoo/...":         "",
		"go":                     "",
		"seen/ckoo":              "",
		"docs/<name>.md":         "",
		"github.com/x/y":         "",
		"cmd/cuckoo/x.go:12":     "",
		"internal/testlong.Skip": "internal/testlong",
	} {
		if got := repoPath(span, top); got != want {
			t.Errorf("repoPath(%q) = %q, want %q", span, got, want)
		}
	}
}
