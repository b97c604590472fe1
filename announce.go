package airlock

import (
	"context"
	"strings"
	"time"

	storepkg "github.com/airlockhq/airlock/store"
)

// topicCatalog is the announcements of changes that may change the
// catalog of every replica sharing a store: "login SERVER" and "logout
// SERVER", a person logged in to SERVER or out of it (through any replica,
// or airlock auth login and logout).
const topicCatalog = "catalog"

// announceTimeout bounds an announcement: it is a courtesy to the other
// replicas, which also try again at their next safe point.
const announceTimeout = 5 * time.Second

// announce tells the replicas sharing the store that the principal logged
// in to server ("login") or out of it ("logout"), so that those whose
// server waited for a login connect it now, and those that hold a login
// in memory drop it.
func (c *Credentials) announce(what, server string) {
	if c.announcer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
	defer cancel()
	c.announcer.Announce(ctx, topicCatalog, what+" "+server)
}

// forget drops what the credentials hold in memory of server's logins
// (the next use reads the store again), if the OAuth client is open.
func (c *Credentials) forget(server string) {
	if !c.opened.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
	defer cancel()
	if client, err := c.client(); err == nil {
		client.Forget(ctx, server)
	}
}

// watchAnnouncements listens, while the host lives, to what the processes
// sharing its store announce (a store.Announcer, such as PostgreSQL) and
// takes each as a sign that the catalog may have changed
// (Options.CatalogChanged): at its next safe point the host connects the
// servers that waited for a login, as it would after a login of its own.
func (h *Host) watchAnnouncements() {
	a, ok := h.gov.store.(storepkg.Announcer)
	if !ok {
		return
	}
	life := h.life
	h.background.Go(func() {
		a.Watch(life, topicCatalog, h.heard, func() {
			// What was missed may have been a logout: every login held in
			// memory is read again.
			for _, s := range h.cfg.Servers {
				h.creds.forget(s.ID)
			}
			h.catalogChanged()
		})
	})
}

// heard takes an announcement of the catalog topic: a logout drops the
// login the host holds in memory (its calls then need a login again, on
// this replica too); either is a sign that the catalog may have changed.
func (h *Host) heard(payload string) {
	if server, ok := strings.CutPrefix(payload, "logout "); ok {
		h.creds.forget(server)
	}
	h.catalogChanged()
}
