package upstream

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestNotJSONQuotesTheLine decodes a server's stdout as the SDK does and
// checks that the line the decoder stopped at is the one quoted, however
// the output arrived.
func TestNotJSONQuotesTheLine(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	big := `{"jsonrpc":"2.0","method":"x","params":{"pad":"` + strings.Repeat("p", 3*stdoutWindowBytes) + `"}}` + "\n"
	for _, tt := range []struct {
		name, out, want string
	}{
		{"banner first", "Starting server\n" + msg, `server wrote a line on stdout that is not JSON-RPC: "Starting server"; a stdio server writes only MCP messages on stdout: logs belong on stderr`},
		{"log line between messages", msg + msg + "\r\n  debug: x=1\r\n" + msg, `not JSON-RPC: "  debug: x=1"`},
		{"after a message larger than the window", big + "ready\n", `not JSON-RPC: "ready"`},
		{"broken JSON", msg + `{"jsonrpc":"2.0","id":2,"result":{"a":nope}}` + "\n", `server wrote malformed JSON on stdout (invalid character 'o' in literal null (expecting 'u')): "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"a\":nope}}"`},
		{"control characters", "\x1b]0;title\x07hi\n", `"\x1b]0;title\ahi"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &stdoutWindow{}
			syntax := decodeToError(t, &windowReader{s: tt.out, w: w, chunk: 4096})
			if got := w.notJSON(syntax); !strings.Contains(got, tt.want) {
				t.Errorf("notJSON = %q\nwant it to contain %q", got, tt.want)
			}
		})
	}
}

// TestNotJSONWaitsForTheRestOfTheLine: a line whose start alone has come
// when the decoder stops is read to its end, briefly, to be quoted whole.
func TestNotJSONWaitsForTheRestOfTheLine(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`+"\nStart")
	go func() {
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, "ing the server\n{}\n")
	}()
	window := &stdoutWindow{src: r}
	syntax := decodeToError(t, &lineLimitReader{f: r, limit: 1 << 20, window: window})
	if got, want := window.notJSON(syntax), `not JSON-RPC: "Starting the server"`; !strings.Contains(got, want) {
		t.Errorf("notJSON = %q\nwant it to contain %q", got, want)
	}
	// A line that never ends is quoted as far as it came.
	io.WriteString(w, "Half a li")
	window = &stdoutWindow{src: r}
	syntax = decodeToError(t, &lineLimitReader{f: r, limit: 1 << 20, window: window})
	began := time.Now()
	if got, want := window.notJSON(syntax), `not JSON-RPC: "Half a li"`; !strings.Contains(got, want) {
		t.Errorf("notJSON = %q\nwant it to contain %q", got, want)
	}
	if took := time.Since(began); took > lineWait+time.Second {
		t.Errorf("waiting for the rest of the line took %s", took)
	}
}

// decodeToError decodes JSON values from r, as the SDK reads a server's
// stdout, until the decoder fails, and returns its syntax error.
func decodeToError(t *testing.T, r io.Reader) *json.SyntaxError {
	t.Helper()
	dec := json.NewDecoder(r)
	var err error
	for err == nil {
		var raw json.RawMessage
		err = dec.Decode(&raw)
	}
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Fatalf("decoding ended with %v, want a syntax error", err)
	}
	return syntax
}

// windowReader hands out s in chunks, recording them in w as
// lineLimitReader does.
type windowReader struct {
	s     string
	w     *stdoutWindow
	chunk int
}

func (r *windowReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, errors.New("EOF")
	}
	n := copy(p[:min(len(p), r.chunk)], r.s)
	r.w.add(p[:n])
	r.s = r.s[n:]
	return n, nil
}

func TestShownLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text\twith a tab", "plain text\twith a tab"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"bidi \u202e and zero-width \u200b", `bidi \u202e and zero-width \u200b`},
		{"bad \xff byte", `bad \xff byte`},
		{"ünïcödé ✓", "ünïcödé ✓"},
		{strings.Repeat("é", 150), strings.Repeat("é", 100) + "…"},
	} {
		if got := shownLine(tt.in); got != tt.want {
			t.Errorf("shownLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
