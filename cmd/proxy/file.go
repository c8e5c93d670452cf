package main

import (
	"context"
	"os"
	"time"

	"github.com/go-logr/logr"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
)

// watchFile applies the configuration file now and whenever it changes. A bad file is logged and refused; the
// last good configuration keeps serving.
func watchFile(ctx context.Context, path string, store *config.Store, log logr.Logger) error {
	var last time.Time
	var lastSize int64 = -1
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if st, err := os.Stat(path); err != nil {
			log.Error(err, "configuration file not readable", "path", path)
		} else if !st.ModTime().Equal(last) || st.Size() != lastSize {
			last, lastSize = st.ModTime(), st.Size()
			if err := store.ApplyFile(path); err != nil {
				log.Error(err, "configuration refused; the last good one keeps serving", "path", path)
			} else {
				cur := store.Current()
				log.Info("configuration applied", "version", cur.OwnershipVersion, "shard", cur.Ownership.Shard, "epoch", cur.Ownership.Epoch)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
