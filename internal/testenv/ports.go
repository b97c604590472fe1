package testenv

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Listen returns a listener on a port of the loopback interface that the
// system hands out, and its base URL (http://127.0.0.1:PORT). It fails
// the test if there is none. The caller serves on it and closes it.
func Listen(t testing.TB) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, "http://" + ln.Addr().String()
}

// RedirectURI returns a loopback OAuth redirect URI on a port that is free
// now, for a login to listen on later (see FreeRedirectURI).
func RedirectURI(t testing.TB) string {
	t.Helper()
	u, err := FreeRedirectURI()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// FreeRedirectURI returns a loopback OAuth redirect URI on a port that is
// free now. Tests and conformance scenarios run in parallel, and their
// servers listen on ports the system hands out from its ephemeral range: a
// port taken from there and given back could be handed to one of them
// before the login listens on it. So the port is drawn from below that
// range, where the system never hands ports out, and checked.
func FreeRedirectURI() (string, error) {
	low := 32768 // Linux's default ip_local_port_range starts here
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				low = n
			}
		}
	}
	for range 100 {
		port := 1024 + rand.IntN(low-1024)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // in use: draw again
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			return "", err
		}
		return "http://" + addr + "/callback", nil
	}
	return "", errors.New("found no free loopback port for a redirect URI")
}
