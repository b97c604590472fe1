package bearer

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/airlockhq/airlock/internal/schema"
)

// minRSABits is the smallest RSA modulus accepted for a signing key.
const minRSABits = 2048

// verifyKey is one usable public key from the issuer's JWKS.
type verifyKey struct {
	kid string
	alg string // the JWK's "alg"; empty means any algorithm of the key's type
	pub any    // *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
}

// fits reports whether k may verify a signature made with alg: the key's
// type (and curve) must be the one alg is defined for, and a key that names
// its algorithm is used with that algorithm only. This is what keeps a public
// RSA key from ever being tried as an HMAC secret, or an ES256 key with ES384.
func (k verifyKey) fits(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch pub := k.pub.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		switch alg {
		case "ES256":
			return pub.Curve == elliptic.P256()
		case "ES384":
			return pub.Curve == elliptic.P384()
		case "ES512":
			return pub.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == "EdDSA" || alg == "Ed25519"
	}
	return false
}

// parseKeys turns a JWKS document into the keys that may verify access
// tokens. Keys that cannot verify signatures are skipped rather than failing
// the whole set (an issuer may publish encryption keys beside signing keys):
// symmetric keys, keys for another use, keys without the verify operation,
// short RSA keys and key types this package does not accept. A private key
// published by mistake contributes only its public half.
func parseKeys(doc []byte) ([]verifyKey, error) {
	set, err := jwk.Parse(doc, jwk.WithIgnoreParseError(true))
	if err != nil {
		return nil, fmt.Errorf("parse JWKS: %w", err)
	}
	var keys []verifyKey
	for i := range set.Len() {
		key, ok := set.Key(i)
		if !ok {
			continue
		}
		if use, ok := key.KeyUsage(); ok && use != "sig" {
			continue
		}
		if ops, ok := key.KeyOps(); ok && !containsOp(ops, "verify") {
			continue
		}
		pubKey, err := jwk.PublicKeyOf(key)
		if err != nil {
			continue // symmetric ("oct") keys have no public half
		}
		var raw any
		if err := jwk.Export(pubKey, &raw); err != nil {
			continue
		}
		k := verifyKey{pub: raw}
		if kid, ok := key.KeyID(); ok {
			k.kid = kid
		}
		if alg, ok := key.Algorithm(); ok {
			k.alg = alg.String()
		}
		switch pub := raw.(type) {
		case *rsa.PublicKey:
			if pub.N.BitLen() < minRSABits {
				continue
			}
		case *ecdsa.PublicKey:
		case ed25519.PublicKey:
		default:
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS has no usable signing keys")
	}
	return keys, nil
}

func containsOp(ops jwk.KeyOperationList, op string) bool {
	for _, o := range ops {
		if string(o) == op {
			return true
		}
	}
	return false
}

// keyCache holds the issuer's keys. It fetches them on first use and when
// they are older than ttl, keeping the old keys if a refresh fails; a token
// naming an unknown key id causes an extra refresh at most once per
// minRefresh, so a flood of made-up key ids cannot turn into a flood of JWKS
// requests. A failed fetch is retried no sooner than retry later. Fetches are
// serialized; concurrent callers wait for the one in flight.
type keyCache struct {
	fetch      func(ctx context.Context) ([]verifyKey, error)
	now        func() time.Time
	ttl        time.Duration
	minRefresh time.Duration
	retry      time.Duration

	mu          sync.Mutex
	keys        []verifyKey
	fetchedAt   time.Time // last successful fetch
	failedAt    time.Time // last failed fetch, zero after a success
	lastErr     error
	lastUnknown time.Time // last refresh caused by an unknown key id
}

// lookup returns the key that verifies a token signed with alg under kid.
func (c *keyCache) lookup(ctx context.Context, kid, alg string) (verifyKey, *Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	fresh := false
	if c.keys == nil || now.Sub(c.fetchedAt) >= c.ttl {
		err := c.refreshLocked(ctx, now)
		if err != nil && c.keys == nil {
			return verifyKey{}, unavailable(descKeysDown, err)
		}
		fresh = err == nil
	}
	k, found, err := pick(c.keys, kid, alg)
	if found || err != nil {
		return k, err
	}
	// An unknown key id may mean the issuer rotated its keys; keys fetched
	// by this very call are as fresh as they get.
	if !fresh && now.Sub(c.lastUnknown) >= c.minRefresh {
		c.lastUnknown = now
		if err := c.refreshLocked(ctx, now); err == nil {
			if k, found, err := pick(c.keys, kid, alg); found || err != nil {
				return k, err
			}
		}
	}
	return verifyKey{}, invalid(descUnknownKey, nil)
}

// ready fetches the keys if there are none yet.
func (c *keyCache) ready(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys != nil {
		return nil
	}
	return c.refreshLocked(ctx, c.now())
}

func (c *keyCache) refreshLocked(ctx context.Context, now time.Time) error {
	if !c.failedAt.IsZero() && now.Sub(c.failedAt) < c.retry {
		return c.lastErr
	}
	keys, err := c.fetch(ctx)
	if err != nil {
		c.failedAt, c.lastErr = now, err
		return err
	}
	c.keys, c.fetchedAt, c.failedAt, c.lastErr = keys, now, time.Time{}, nil
	return nil
}

// pick finds the key for kid and alg. found is false when no key has the
// kid (the caller may refresh); err is set when the token cannot be
// verified with any key.
func pick(keys []verifyKey, kid, alg string) (k verifyKey, found bool, err *Error) {
	if kid == "" {
		var fit []verifyKey
		for _, k := range keys {
			if k.fits(alg) {
				fit = append(fit, k)
			}
		}
		switch len(fit) {
		case 0:
			return verifyKey{}, false, invalid(descUnknownKey, nil)
		case 1:
			return fit[0], true, nil
		default:
			return verifyKey{}, false, invalid(descNoKeyID, nil)
		}
	}
	named := false
	for _, k := range keys {
		if k.kid != kid {
			continue
		}
		named = true
		if k.fits(alg) {
			return k, true, nil
		}
	}
	if named {
		// The issuer has this key, but not for this algorithm: an
		// algorithm-confusion attempt or a misconfigured issuer.
		return verifyKey{}, false, invalid(descAlgorithm, nil)
	}
	return verifyKey{}, false, nil
}

// Response size limits for documents fetched from the issuer.
const (
	maxMetadataBytes      = 1 << 20
	maxJWKSBytes          = 1 << 20
	maxIntrospectionBytes = 64 << 10
)

// getJSON fetches rawURL and returns its body, which must be JSON and at most
// limit bytes. A 404 is reported as errNotFound so that discovery can try the
// next well-known location.
func getJSON(ctx context.Context, client *http.Client, rawURL string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redact(rawURL), err)
	}
	defer resp.Body.Close()
	return readJSON(resp, rawURL, limit)
}

func readJSON(resp *http.Response, rawURL string, limit int64) ([]byte, error) {
	if resp.StatusCode == http.StatusNotFound {
		return nil, errNotFound
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", redact(rawURL), resp.Status)
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return nil, fmt.Errorf("%s answered with content type %q, want JSON", redact(rawURL), resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", redact(rawURL), err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%s answered with more than %d bytes", redact(rawURL), limit)
	}
	return body, nil
}

var errNotFound = errors.New("not found")

// redact drops the query of a URL for error messages and logs.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(invalid URL)"
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}

// authServerMetadata is the part of RFC 8414 / OpenID Connect discovery
// metadata a resource server uses.
type authServerMetadata struct {
	Issuer                string
	JWKSURI               string
	IntrospectionEndpoint string
}

// metadataURLs lists where an issuer's metadata may be published, in the
// order they are tried: RFC 8414 (the well-known path inserted before the
// issuer's path), OpenID Connect Discovery (appended to the issuer), and the
// RFC 8414 §5 compatibility form of OpenID Connect.
func metadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, err
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	urls := []string{origin + "/.well-known/oauth-authorization-server" + path}
	urls = append(urls, origin+path+"/.well-known/openid-configuration")
	if path != "" {
		urls = append(urls, origin+"/.well-known/openid-configuration"+path)
	}
	return urls, nil
}

// discover finds the issuer's metadata. The metadata's issuer must equal the
// configured issuer exactly (RFC 8414 §3.3), or the document is refused.
func discover(ctx context.Context, client *http.Client, issuer string) (*authServerMetadata, error) {
	urls, err := metadataURLs(issuer)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, u := range urls {
		body, err := getJSON(ctx, client, u, maxMetadataBytes)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		obj, err := decodeObject(body)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", redact(u), err))
			continue
		}
		md := authServerMetadata{
			Issuer:                stringField(obj, "issuer"),
			JWKSURI:               stringField(obj, "jwks_uri"),
			IntrospectionEndpoint: stringField(obj, "introspection_endpoint"),
		}
		if md.Issuer != issuer {
			errs = append(errs, fmt.Errorf("%s names issuer %q, want %q", redact(u), md.Issuer, issuer))
			continue
		}
		if md.JWKSURI == "" {
			errs = append(errs, fmt.Errorf("%s has no jwks_uri", redact(u)))
			continue
		}
		return &md, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("no authorization server metadata found for issuer %q", issuer)
	}
	return nil, fmt.Errorf("discover issuer %q: %w", issuer, errors.Join(errs...))
}

// decodeObject decodes a JSON object from a remote party, refusing
// duplicate keys, keys equal under case folding and other ambiguities (see
// internal/schema), so that fields are read by their exact names only.
func decodeObject(data []byte) (map[string]any, error) {
	v, err := schema.Decode(data, &schema.DecodeOptions{MaxBytes: len(data) + 1, CaseFold: true})
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return obj, nil
}

// stringField returns obj[name] if it is a string, else "".
func stringField(obj map[string]any, name string) string {
	s, _ := obj[name].(string)
	return s
}
