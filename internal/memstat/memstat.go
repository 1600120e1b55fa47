// Package memstat measures memory for benchmarks and tests: the peak of live heap objects
// while a run goes, the live heap after a collection, and the process's peak resident set.
package memstat

import (
	"errors"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// HeapPeak records the peak of live heap objects, sampled every millisecond, from
// StartHeapPeak until Stop.
type HeapPeak struct {
	stop chan struct{}
	done chan struct{}
	peak atomic.Uint64
}

// StartHeapPeak starts sampling.
func StartHeapPeak() *HeapPeak {
	h := &HeapPeak{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if v := heapObjects(); v > h.peak.Load() {
				h.peak.Store(v)
			}
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// Stop ends sampling and returns the peak, in bytes.
func (h *HeapPeak) Stop() uint64 {
	close(h.stop)
	<-h.done
	return h.peak.Load()
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// LiveHeap returns the heap in use after two collections, in bytes: what live values hold.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// ResetPeakRSS resets the process's peak resident set to its current one
// (/proc/self/clear_refs); it fails where the system does not offer that.
func ResetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// PeakRSS returns the process's peak resident set (VmHWM in /proc/self/status), in bytes.
func PeakRSS() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}
