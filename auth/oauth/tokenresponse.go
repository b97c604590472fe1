package oauth

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Bounds on what a token response may carry.
const (
	// maxTokenBytes bounds an access or a refresh token: common servers
	// refuse request headers far smaller.
	maxTokenBytes = 16 << 10
	// maxLifetime is the longest expires_in accepted.
	maxLifetime = 365 * 24 * time.Hour
)

// checkTokenResponse refuses a token response that could not be stored and
// used as it is: a token type other than Bearer; an access token that is
// not an RFC 6750 b64token (a CR or LF in it would break every request's
// Authorization header); a refresh token that is not RFC 6749 VSCHARs; an
// expires_in that is not a whole number of seconds between one second and
// maxLifetime (RFC 6749 §5.1: a JSON number; a negative one would store a
// token that is expired on arrival). It returns the authorization server's
// mistake as a refusal; nothing of a refused response is stored.
func checkTokenResponse(server string, tok *oauth2.Token) *Error {
	if tok.TokenType == "" {
		// RFC 6749 §5.1 requires it; the library would take Bearer.
		return refused(server, "the authorization server's token response has no token_type; nothing was stored; report this to the authorization server's operator", nil)
	}
	if !strings.EqualFold(tok.Type(), "Bearer") {
		return refused(server, "the authorization server issued a "+printable(tok.Type(), 32)+" token; only bearer tokens are supported", nil)
	}
	var problem string
	switch {
	case len(tok.AccessToken) > maxTokenBytes:
		problem = fmt.Sprintf("an access token of %d bytes (at most %d are accepted)", len(tok.AccessToken), maxTokenBytes)
	case !isB64Token(tok.AccessToken):
		problem = "an access token that is not an RFC 6750 bearer token (b64token)" + badByte(strings.TrimRight(tok.AccessToken, "="), isB64TokenByte)
	case len(tok.RefreshToken) > maxTokenBytes:
		problem = fmt.Sprintf("a refresh token of %d bytes (at most %d are accepted)", len(tok.RefreshToken), maxTokenBytes)
	case badByte(tok.RefreshToken, isVSChar) != "":
		problem = "a refresh token that is not RFC 6749 text (VSCHAR)" + badByte(tok.RefreshToken, isVSChar)
	default:
		problem = checkExpiresIn(tok.Extra("expires_in"))
	}
	if problem == "" {
		return nil
	}
	return refused(server, "the authorization server sent "+problem+"; nothing was stored; report this to the authorization server's operator", nil)
}

// checkExpiresIn returns what is wrong with a token response's expires_in
// (as golang.org/x/oauth2 decoded it: a float64 from JSON, an int64 from a
// form-encoded response, nil when absent), or "".
func checkExpiresIn(v any) string {
	var secs float64
	switch x := v.(type) {
	case nil:
		return "" // RFC 6749 §5.1: RECOMMENDED; without it the token is used until refused
	case float64:
		secs = x
	case int64:
		secs = float64(x)
	case string:
		return "expires_in as a string (" + strconv.Quote(printable(x, 32)) + "), not a number"
	default:
		return "an expires_in that is not a number"
	}
	if secs != math.Trunc(secs) || secs < 1 || secs > maxLifetime.Seconds() {
		return fmt.Sprintf("expires_in %s, not a whole number of seconds from 1 to %d (one year)",
			strconv.FormatFloat(secs, 'g', 12, 64), int64(maxLifetime.Seconds()))
	}
	return ""
}

// isB64Token reports whether s is an RFC 6750 §2.1 b64token:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	return body != "" && badByte(body, isB64TokenByte) == ""
}

func isB64TokenByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
}

// isVSChar reports whether c is an RFC 6749 Appendix A VSCHAR (%x20-7E).
func isVSChar(c byte) bool { return c >= 0x20 && c <= 0x7e }

// badByte names the first byte of s that ok refuses (": it contains the
// byte 0x0d"), never the token around it, or returns "" when there is
// none.
func badByte(s string, ok func(byte) bool) string {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return fmt.Sprintf(": it contains the byte 0x%02x", s[i])
		}
	}
	return ""
}
