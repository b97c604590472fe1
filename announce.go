package airlock

import (
	"context"
	"time"

	storepkg "github.com/airlockhq/airlock/store"
)

// topicCatalog is the announcements of changes that may change the
// catalog of every replica sharing a store: "login SERVER", a person
// logged in to SERVER (through any replica, or airlock auth login).
const topicCatalog = "catalog"

// announceTimeout bounds an announcement: it is a courtesy to the other
// replicas, which also try again at their next safe point.
const announceTimeout = 5 * time.Second

// announceLogin tells the replicas sharing the store that the principal
// logged in to server, so that those whose server waited for a login
// connect it now.
func (c *Credentials) announceLogin(server string) {
	if c.announcer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
	defer cancel()
	c.announcer.Announce(ctx, topicCatalog, "login "+server)
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
		a.Watch(life, topicCatalog, func(string) { h.catalogChanged() }, h.catalogChanged)
	})
}
