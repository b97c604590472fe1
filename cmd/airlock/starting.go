package main

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// A handoff hands the connections of one listener to one server after
// another: the one that answers while the gateway starts its servers,
// then the gateway. Connections accepted between the two wait for the
// second.
type handoff struct {
	ln     net.Listener
	conns  chan net.Conn
	failed chan struct{} // closed when Accept failed: err says why
	err    error
	done   chan struct{} // closed when the last phase closes
	once   sync.Once
}

func newHandoff(ln net.Listener) *handoff {
	h := &handoff{ln: ln, conns: make(chan net.Conn), failed: make(chan struct{}), done: make(chan struct{})}
	go h.accept()
	return h
}

func (h *handoff) accept() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			h.err = err
			close(h.failed)
			return
		}
		select {
		case h.conns <- c:
		case <-h.done:
			c.Close()
			return
		}
	}
}

// close closes the listener: no phase takes connections any more.
func (h *handoff) close() {
	h.once.Do(func() {
		close(h.done)
		h.ln.Close()
	})
}

// phase is a listener for one server: closing it ends the server's turn,
// and, for the last, closes the listener.
func (h *handoff) phase(last bool) net.Listener {
	return &phase{h: h, last: last, end: make(chan struct{})}
}

type phase struct {
	h    *handoff
	last bool
	end  chan struct{}
	once sync.Once
}

func (p *phase) Accept() (net.Conn, error) {
	select {
	case c := <-p.h.conns:
		return c, nil
	case <-p.end:
	case <-p.h.done:
	case <-p.h.failed:
		return nil, p.h.err
	}
	return nil, net.ErrClosed
}

func (p *phase) Close() error {
	p.once.Do(func() {
		close(p.end)
		if p.last {
			p.h.close()
		}
	})
	return nil
}

func (p *phase) Addr() net.Addr { return p.h.ln.Addr() }

// serveStarting answers on ln while the gateway starts its servers: 200
// at /healthz (the process runs), 503 with Retry-After everywhere else
// (/readyz included). stop ends it, and waits a moment for its requests.
func serveStarting(ln net.Listener) (stop func()) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "starting: the gateway is starting its servers; try again in a moment", http.StatusServiceUnavailable)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-served
	}
}
