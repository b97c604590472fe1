package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"
)

// TestStdioInputEndsAfterRequests: a client that sends its requests and
// closes its input (as the MCP stdio transport ends a session) gets every
// answer first: a write in flight is not cut off into an unknown outcome.
func TestStdioInputEndsAfterRequests(t *testing.T) {
	f := start(t, "", nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- f.g.ServeStdio(context.Background(), inR, outW); outW.Close() }()
	answers := map[string]map[string]any{}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["id"] != nil {
				answers[string(must(json.Marshal(m["id"])))] = m
			}
		}
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"w__wait_write","arguments":{}}}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":"p","method":"ping"}`+"\n")
	inW.Close()
	time.AfterFunc(300*time.Millisecond, func() { os.WriteFile(f.mark+".go", nil, 0o644) })
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("ServeStdio did not return")
	}
	<-read
	if answers[`"p"`] == nil {
		t.Errorf("the ping was not answered; answers %v", answers)
	}
	res, _ := answers["2"]["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)
	if meta["airlock/status"] != "ok" {
		t.Errorf("the write sent before the input ended: %v, want it answered ok", answers["2"])
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
