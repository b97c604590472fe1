package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// jwtBearerAssertion is the client_assertion_type of private_key_jwt
// (RFC 7523 §2.2).
const jwtBearerAssertion = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertionLifetime is how long a client assertion is valid: it is made
// for one token request, sent at once.
const assertionLifetime = time.Minute

// ParsePrivateKey reads the PEM private key that signs a client's
// assertions (private_key_jwt): PKCS #8, PKCS #1 (RSA) or SEC 1 (EC). The
// key must be RSA of at least 2048 bits, ECDSA on P-256, P-384 or P-521,
// or Ed25519. Its errors say what is wrong without quoting the file.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("the file holds no PEM block; give a PEM private key (-----BEGIN PRIVATE KEY-----)")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "ENCRYPTED PRIVATE KEY":
		return nil, errors.New("the private key is encrypted; airlock needs it unencrypted, in a file only its owner may read")
	default:
		return nil, fmt.Errorf("the PEM block is a %q, not a private key", printable(block.Type, 32))
	}
	if err != nil {
		return nil, errors.New("the PEM private key cannot be parsed (PKCS #8, PKCS #1 or SEC 1 expected)")
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("the private key is of a kind that cannot sign")
	}
	if _, err := signingAlg(signer); err != nil {
		return nil, err
	}
	return signer, nil
}

// signingAlg returns the JWS algorithm a key signs client assertions with.
func signingAlg(k crypto.Signer) (jose.SignatureAlgorithm, error) {
	switch k := k.(type) {
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return "", fmt.Errorf("the RSA key has %d bits; at least 2048 are needed", k.N.BitLen())
		}
		return jose.RS256, nil
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
		return "", errors.New("the EC key is not on P-256, P-384 or P-521")
	case ed25519.PrivateKey:
		return jose.EdDSA, nil
	}
	return "", errors.New("the key is not an RSA, ECDSA or Ed25519 private key")
}

// clientAssertion returns a signed client assertion for one token request
// (RFC 7523 §3): issuer and subject the client id, audience the
// authorization server's issuer identifier, a lifetime of a minute and a
// fresh id, so that it cannot be replayed for long.
func clientAssertion(key crypto.Signer, clientID, issuer string, now time.Time) (string, error) {
	alg, err := signingAlg(key)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", errors.New("cannot sign with the private key")
	}
	claims := jwt.Claims{
		Issuer:    clientID,
		Subject:   clientID,
		Audience:  jwt.Audience{issuer},
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now.Add(-5 * time.Second)),
		Expiry:    jwt.NewNumericDate(now.Add(assertionLifetime)),
		ID:        rand.Text(),
	}
	s, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		return "", errors.New("cannot sign the client assertion")
	}
	return s, nil
}
