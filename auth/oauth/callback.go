package oauth

import (
	"context"
	"crypto/subtle"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// callback answers the authorization server's redirect on the loopback
// redirect URI. It serves one transaction at a time: the state the SDK put
// in the authorization URL, an expiry, and a slot for the one answer that
// may complete it. Requests with any other state are refused and do not
// disturb the transaction.
type callback struct {
	server string
	path   string

	mu sync.Mutex
	tx *transaction
}

type transaction struct {
	state   string
	expires time.Time
	used    bool
	done    chan callbackResult // buffered: the answer may come before wait
}

type callbackResult struct {
	code, state, iss string
	err              error
}

func (cb *callback) begin(state string, expires time.Time) *transaction {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	cb.tx = &transaction{state: state, expires: expires, done: make(chan callbackResult, 1)}
	return cb.tx
}

func (cb *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.URL.Path != cb.path || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	cb.mu.Lock()
	tx := cb.tx
	ok := tx != nil && !tx.used && subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(tx.state)) == 1
	if ok && time.Now().After(tx.expires) {
		ok = false
	}
	if ok {
		tx.used = true
	}
	cb.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "Airlock: this login link is not valid, or no longer. Start the login again.\n")
		return
	}
	if e := q.Get("error"); e != "" {
		tx.done <- callbackResult{err: loginFailed(cb.server, "the authorization server refused the login ("+printable(e, 64)+": "+printable(q.Get("error_description"), 200)+")", nil)}
		io.WriteString(w, "Airlock: the login was refused. You can close this window.\n")
		return
	}
	code := q.Get("code")
	if code == "" {
		tx.done <- callbackResult{err: loginFailed(cb.server, "the authorization server's answer has no code", nil)}
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "Airlock: the login failed. You can close this window.\n")
		return
	}
	tx.done <- callbackResult{code: code, state: q.Get("state"), iss: q.Get("iss")}
	io.WriteString(w, "Airlock: login complete. You can close this window.\n")
}

// wait returns the transaction's answer, or an error once it expires or ctx
// ends.
func (tx *transaction) wait(ctx context.Context, server string) (callbackResult, error) {
	t := time.NewTimer(time.Until(tx.expires))
	defer t.Stop()
	select {
	case res := <-tx.done:
		return res, res.err
	case <-t.C:
		return callbackResult{}, loginFailed(server, "the login was not completed in time; run the login again", nil)
	case <-ctx.Done():
		return callbackResult{}, ctx.Err()
	}
}

// printable keeps the printable ASCII of s, at most n bytes, for messages
// built from what a remote party sent.
func printable(s string, n int) string {
	b := make([]byte, 0, min(len(s), n))
	for i := 0; i < len(s) && len(b) < n; i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			b = append(b, c)
		}
	}
	return string(b)
}

func urlParse(raw string) (*url.URL, error) { return url.Parse(raw) }
