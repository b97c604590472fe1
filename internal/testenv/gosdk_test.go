package testenv_test

import (
	"os"
	"testing"

	"github.com/airlockhq/airlock/internal/testenv"
)

func TestGoSDKEverythingServerIsCached(t *testing.T) {
	first := testenv.GoSDKEverythingServer(t)
	info, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s has mode %v, want an executable file", first, info.Mode())
	}
	if second := testenv.GoSDKEverythingServer(t); second != first {
		t.Errorf("second GoSDKEverythingServer = %q, want the first build %q", second, first)
	}
}
