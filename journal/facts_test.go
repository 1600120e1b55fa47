package journal

import "context"

// Facts reads every run (tests only; reload reads FactsFor) of the table. A run that cannot be replayed is an error, since what
// it loaded is unknown. Runs are read from their snapshots where those are current.
func Facts(ctx context.Context, s Store, tableID string) (*TableFacts, error) {
	return facts(ctx, s, tableID, nil, true)
}

// LoadedKeys returns the files of this run that are verified or may be loaded (open, loaded,
// unknown, mismatch), by key.
func (s *State) LoadedKeys() map[string]FileState {
	out := map[string]FileState{}
	for _, f := range s.files {
		if v := s.view(f); v.Status.PossiblyLoaded() {
			out[f.Key] = v
		}
	}
	return out
}

// LoadedKeys returns every file any run of the table shows verified or possibly loaded.
func LoadedKeys(ctx context.Context, s Store, tableID string) ([]FileState, error) {
	f, err := Facts(ctx, s, tableID)
	if err != nil {
		return nil, err
	}
	return f.Loaded, nil
}
