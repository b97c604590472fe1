package airlock

import (
	"os/user"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/policy"
)

// principalFor fills in the empty fields of p: from the configuration's
// tenancy, else tenant "default" and the operating-system user.
func principalFor(cfg *config.Config, p Principal) Principal {
	if p.Tenant == "" {
		p.Tenant = cfg.Tenancy.Tenant
	}
	if p.User == "" {
		p.User = cfg.Tenancy.User
	}
	if p.Tenant == "" {
		p.Tenant = "default"
	}
	if p.User == "" {
		if u, err := user.Current(); err == nil {
			p.User = u.Username
		}
	}
	return p
}

// ConfigPrincipal returns who the command line acts for under cfg: the
// tenant and user of tenancy:, with the defaults of a host opened without
// Options.Principal.
func ConfigPrincipal(cfg *config.Config) Principal { return principalFor(cfg, Principal{}) }

// A Principal is who the host, or a task, acts for: its tenant and user.
type Principal = policy.Principal

// Principal returns who the host acts for.
func (h *Host) Principal() Principal { return h.gov.principal }
