package bearertest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// A service is a client registered for the client credentials grant: it
// proves who it is with a secret (HTTP Basic) or with an RFC 7523
// assertion signed by the private key of public.
type service struct {
	secret string
	public crypto.PublicKey
}

// AllowService registers a client for the client credentials grant. With
// public nil it authenticates with secret over HTTP Basic
// (client_secret_basic); otherwise with assertions signed by the private
// key of public (an *rsa.PublicKey, RS256, or a P-256 *ecdsa.PublicKey,
// ES256), whose signature, issuer, subject, audience (this issuer) and
// times the token endpoint checks. Its tokens name the client as subject,
// for the tenant of SetPerson.
func (iss *Issuer) AllowService(clientID, secret string, public crypto.PublicKey) {
	l := &iss.logins
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.services == nil {
		l.services = map[string]*service{}
	}
	l.services[clientID] = &service{secret: secret, public: public}
}

// ServiceGrants returns how many tokens the client credentials grant
// issued, and how many of its requests were refused for the client's
// credentials.
func (iss *Issuer) ServiceGrants() (issued, refused int) {
	l := &iss.logins
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.serviceIssued, l.serviceRefused
}

// serviceGrant authenticates a client credentials token request and
// returns the grant it stands for, or nil. The caller holds l.mu.
func (iss *Issuer) serviceGrant(r *http.Request) *grant {
	l := &iss.logins
	f := r.PostForm
	var client string
	var svc *service
	if id, secret, ok := r.BasicAuth(); ok {
		client, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		svc = l.services[client]
		if svc == nil || svc.public != nil || subtle.ConstantTimeCompare([]byte(secret), []byte(svc.secret)) != 1 {
			svc = nil
		}
	} else if f.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		client = f.Get("client_id")
		svc = l.services[client]
		if svc == nil || svc.public == nil || checkAssertion(f.Get("client_assertion"), svc.public, client, iss.URL) != nil {
			svc = nil
		}
	}
	if svc == nil || f.Get("resource") == "" {
		l.serviceRefused++
		return nil
	}
	l.serviceIssued++
	return &grant{client: client, resource: f.Get("resource"), tenant: or(l.tenant, "default"), subject: client,
		scopes: strings.Fields(f.Get("scope"))}
}

// checkAssertion verifies a client assertion (RFC 7523 §3) with the
// standard library: its signature by public, iss and sub the client, aud
// the issuer, and its times.
func checkAssertion(token string, public crypto.PublicKey, client, issuer string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("not a compact JWS")
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Iss, Sub string
		Aud      any
		Exp, Iat int64
	}
	if err := errors.Join(json.Unmarshal(hb, &hdr), json.Unmarshal(cb, &claims)); err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch k := public.(type) {
	case *rsa.PublicKey:
		if hdr.Alg != "RS256" || rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) != nil {
			return errors.New("bad signature")
		}
	case *ecdsa.PublicKey:
		if hdr.Alg != "ES256" || len(sig) != 64 ||
			!ecdsa.Verify(k, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			return errors.New("bad signature")
		}
	default:
		return errors.New("unsupported key")
	}
	aud := claims.Aud == issuer
	if list, ok := claims.Aud.([]any); ok {
		for _, a := range list {
			aud = aud || a == issuer
		}
	}
	now := time.Now().Unix()
	if claims.Iss != client || claims.Sub != client || !aud || claims.Exp <= now || claims.Iat > now+5 {
		return errors.New("bad claims")
	}
	return nil
}
