package storage

import "net/http"

// SharedTransport returns an HTTP transport for many backends opened over roots on the same
// store (a scan opens one per table): given to each as Config.Transport, it hands the
// connections (and TLS sessions) one backend opened to the next, keeping up to perHost idle
// ones per host, where each backend's SDK would otherwise build its own transport and open
// new connections. Its other settings are net/http's defaults (proxy from the environment,
// timeouts).
func SharedTransport(perHost int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	perHost = max(perHost, 2)
	t.MaxIdleConnsPerHost = perHost
	t.MaxIdleConns = max(t.MaxIdleConns, 4*perHost)
	return t
}
