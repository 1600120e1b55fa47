package inspect

// Exported for the external tests.
var (
	ParquetFile    = parquetFile
	HostileFooters = hostileFooters
)
