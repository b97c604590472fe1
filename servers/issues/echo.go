package issues

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds on what an answer repeats of its request. A client that sends a
// megabyte of method name, tool name, argument or header must not get a
// megabyte back: every error message, error body and error data is cut.
const (
	// maxEcho bounds one value of the request quoted in a message (a
	// method, a tool name, an id, a header value), in bytes.
	maxEcho = 128
	// maxMessage bounds a whole error message or error body, in bytes.
	maxMessage = 1024
)

// ellipsis marks a cut.
const ellipsis = "…"

// clip returns s, cut to maxEcho bytes (on a character boundary) with an
// ellipsis when it is longer.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	return cut(s, maxEcho) + ellipsis
}

// cut returns the longest prefix of s of at most n bytes that does not
// split a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// shorten bounds a message someone else wrote (the SDK's, the schema
// validator's) that may quote the request: every run of characters
// without white space longer than maxEcho, which is where a quoted value
// is, is cut with an ellipsis (keeping a closing quote when the run was
// quoted), and then the whole message is cut to maxMessage.
func shorten(msg string) string {
	if len(msg) <= maxEcho {
		return msg
	}
	var b []byte
	start := 0
	flush := func(end int) {
		run := msg[start:end]
		if len(run) > maxEcho {
			quoted := run[0] == '"' && run[len(run)-1] == '"'
			run = cut(run, maxEcho) + ellipsis
			if quoted {
				run += `"`
			}
		}
		b = append(b, run...)
	}
	for i := 0; i < len(msg); i++ {
		if c := msg[i]; c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			flush(i)
			b = append(b, c)
			start = i + 1
		}
	}
	flush(len(msg))
	if len(b) > maxMessage {
		return cut(string(b), maxMessage) + ellipsis
	}
	return string(b)
}

// boundEchoes bounds, in every answer of next, what could repeat the
// request: the message and the data of each JSON-RPC error, the text of a
// tool result that is an error (application/json answers, and each event
// of a text/event-stream), and the body of any other answer with a status
// of 400 or more. Successful results pass untouched.
func boundEchoes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &boundWriter{ResponseWriter: w}
		next.ServeHTTP(bw, r)
		bw.finish()
	})
}

// boundWriter is the ResponseWriter of [boundEchoes]. What it does with a
// body depends on the answer's status and media type, decided when the
// header is written.
type boundWriter struct {
	http.ResponseWriter
	mode    writeMode
	code    int
	buf     []byte // modeJSON, modeText: the body so far; modeEvents: an unfinished event
	dropped bool   // modeText: bytes beyond the bound were dropped
}

type writeMode int

const (
	modeUndecided writeMode = iota
	modePass                // untouched
	modeJSON                // buffered, rewritten whole
	modeEvents              // rewritten event by event
	modeText                // an error body, buffered up to a bound
)

func (bw *boundWriter) WriteHeader(code int) {
	if bw.mode != modeUndecided {
		return
	}
	bw.code = code
	mt, _, _ := mime.ParseMediaType(bw.Header().Get("Content-Type"))
	switch {
	case mt == "application/json":
		bw.mode = modeJSON
	case mt == "text/event-stream":
		bw.mode = modeEvents
	case code >= 400:
		bw.mode = modeText
	default:
		bw.mode = modePass
	}
	if bw.mode == modePass || bw.mode == modeEvents {
		bw.ResponseWriter.WriteHeader(code)
	}
}

func (bw *boundWriter) Write(p []byte) (int, error) {
	if bw.mode == modeUndecided {
		bw.WriteHeader(http.StatusOK)
	}
	switch bw.mode {
	case modeJSON:
		bw.buf = append(bw.buf, p...)
	case modeText:
		if room := maxMessage + 1 - len(bw.buf); room > 0 {
			bw.buf = append(bw.buf, p[:min(len(p), room)]...)
		}
		bw.dropped = bw.dropped || len(bw.buf) > maxMessage
	case modeEvents:
		bw.buf = append(bw.buf, p...)
		if err := bw.writeEvents(); err != nil {
			return 0, err
		}
	default:
		return bw.ResponseWriter.Write(p)
	}
	return len(p), nil
}

// writeEvents writes the complete events buffered so far, each with its
// data bounded.
func (bw *boundWriter) writeEvents() error {
	for {
		i := bytes.Index(bw.buf, []byte("\n\n"))
		if i < 0 {
			return nil
		}
		event := boundEvent(bw.buf[:i+2])
		bw.buf = bw.buf[i+2:]
		if _, err := bw.ResponseWriter.Write(event); err != nil {
			return err
		}
	}
}

// Flush passes a flush on, except for the buffered modes, whose body is
// written whole when the handler returns.
func (bw *boundWriter) Flush() {
	if bw.mode == modeJSON || bw.mode == modeText {
		return
	}
	if f, ok := bw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (bw *boundWriter) Unwrap() http.ResponseWriter { return bw.ResponseWriter }

// finish writes what the buffered modes kept back.
func (bw *boundWriter) finish() {
	var body []byte
	switch bw.mode {
	case modeJSON:
		body = boundJSON(bw.buf)
	case modeText:
		msg := shorten(string(bw.buf))
		if bw.dropped && !strings.HasSuffix(msg, ellipsis) {
			msg += ellipsis
		}
		body = []byte(msg)
	case modeEvents:
		if len(bw.buf) > 0 {
			bw.ResponseWriter.Write(bw.buf)
		}
		return
	default:
		return
	}
	bw.Header().Del("Content-Length")
	bw.ResponseWriter.WriteHeader(bw.code)
	bw.ResponseWriter.Write(body)
}

// boundEvent bounds the data of one server-sent event whose one data line
// is a JSON-RPC message.
func boundEvent(event []byte) []byte {
	lines := bytes.Split(event, []byte("\n"))
	data := -1
	for i, l := range lines {
		if bytes.HasPrefix(l, []byte("data:")) {
			if data >= 0 {
				return event // several data lines: not what the SDK writes
			}
			data = i
		}
	}
	if data < 0 {
		return event
	}
	payload := bytes.TrimPrefix(bytes.TrimPrefix(lines[data], []byte("data:")), []byte(" "))
	lines[data] = append([]byte("data: "), boundJSON(payload)...)
	return bytes.Join(lines, []byte("\n"))
}

// boundJSON bounds a JSON-RPC message or batch. Anything it cannot read
// as one is returned as it is.
func boundJSON(body []byte) []byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return body
		}
		changed := false
		for i, m := range batch {
			if b, ok := boundMessage(m); ok {
				batch[i], changed = b, true
			}
		}
		if !changed {
			return body
		}
		return marshal(batch)
	}
	if b, ok := boundMessage(trimmed); ok {
		return b
	}
	return body
}

// boundMessage bounds one JSON-RPC message: its error's message and data,
// or the text of an error result. It reports whether anything changed.
func boundMessage(raw json.RawMessage) (json.RawMessage, bool) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(raw, &msg) != nil {
		return nil, false
	}
	changed := false
	var rpcErr map[string]any
	if e, ok := msg["error"]; ok && decode(e, &rpcErr) == nil {
		if m, ok := rpcErr["message"].(string); ok && shorten(m) != m {
			rpcErr["message"], changed = shorten(m), true
		}
		if d, ok := rpcErr["data"]; ok {
			before := marshal(d)
			if bd := boundValue(d); !bytes.Equal(marshal(bd), before) {
				rpcErr["data"], changed = bd, true
			}
		}
		msg["error"] = marshal(rpcErr)
	}
	var res map[string]any
	if r, ok := msg["result"]; ok && decode(r, &res) == nil && res["isError"] == true {
		content, _ := res["content"].([]any)
		for _, c := range content {
			item, _ := c.(map[string]any)
			if text, ok := item["text"].(string); ok && shorten(text) != text {
				item["text"], changed = shorten(text), true
			}
		}
		msg["result"] = marshal(res)
	}
	if !changed {
		return nil, false
	}
	return marshal(msg), true
}

// boundValue cuts every string in v (error data, which may repeat a
// request's values) to maxEcho; data whose encoding is still longer than
// maxMessage is replaced by a note.
func boundValue(v any) any {
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return clip(x)
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[clip(k)] = walk(e)
			}
			return out
		}
		return v
	}
	out := walk(v)
	if len(marshal(out)) > maxMessage {
		return "(left out: longer than " + strconv.Itoa(maxMessage) + " bytes)"
	}
	return out
}

// decode decodes JSON keeping numbers exact.
func decode(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// marshal encodes v as JSON, leaving <, > and & readable.
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage("null")
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
