package main

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dedupkit/cuckoo/server"
	"github.com/dedupkit/cuckoo/server/servermetrics"
)

// opsServer is the HTTP server of `cuckoo serve --metrics`: the
// server's metrics with the Go runtime's and the process's on /metrics,
// /healthz (the process is alive) and /readyz (the data directory is
// loaded and the server accepts connections). It starts before the data
// directory is loaded, so that an orchestrator sees a long replay as
// alive and not ready rather than as no answer.
type opsServer struct {
	reg  *prometheus.Registry
	srv  atomic.Pointer[server.Server] // set once New has loaded the data
	http *http.Server
	ln   net.Listener
}

// startOps listens on addr and serves the endpoints; logf gets the HTTP
// server's errors.
func startOps(addr string, logf func(format string, args ...any)) (*opsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	o := &opsServer{reg: prometheus.NewRegistry(), ln: ln}
	o.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.InstrumentMetricHandler(o.reg, promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", o.ready)
	o.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(logWriter(logf), "", 0),
	}
	go func() {
		if err := o.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("metrics: %v", err)
		}
	}()
	return o, nil
}

// serve makes the endpoints report on srv, which has loaded its data.
func (o *opsServer) serve(srv *server.Server) {
	o.reg.MustRegister(servermetrics.NewCollector(srv))
	o.srv.Store(srv)
}

// ready answers /readyz: 200 once the data directory is loaded and the
// server accepts connections; 503, saying why, before and while it stops.
func (o *opsServer) ready(w http.ResponseWriter, _ *http.Request) {
	srv := o.srv.Load()
	switch {
	case srv == nil:
		http.Error(w, "loading the data directory", http.StatusServiceUnavailable)
	case srv.Addr() == nil:
		http.Error(w, "not accepting connections (starting or stopping)", http.StatusServiceUnavailable)
	default:
		fmt.Fprintln(w, "ready")
	}
}

// addr returns the address the endpoints are served on.
func (o *opsServer) addr() net.Addr { return o.ln.Addr() }

// close stops serving the endpoints.
func (o *opsServer) close() { o.http.Close() }

// logWriter turns the lines an http.Server logs into log lines of the
// command.
type logWriter func(format string, args ...any)

func (l logWriter) Write(p []byte) (int, error) {
	l("metrics: %s", bytes.TrimSuffix(p, []byte("\n")))
	return len(p), nil
}
