package cmd

import "github.com/zbrecover/zbrecover/recovery"

// places is the run's opener of places (--stage-to, --keys-to, --archive-to, --journal and
// the places the journal names), built once the flags are parsed.
func (f *Factory) places() *recovery.Places {
	if f.runPlaces == nil {
		f.runPlaces = &recovery.Places{Opener: f.opener(f.defaultPolicy()), Config: f.Global.StorageConfig(), Workspace: f.workspace(),
			Concurrency: f.Global.Concurrency, Log: f.Logger}
	}
	return f.runPlaces
}
