package storage

// Waiting returns the number of callers waiting in Acquire.
func (a *Adaptive) Waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiters.Len()
}
