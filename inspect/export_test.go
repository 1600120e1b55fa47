package inspect

// Exported for the external tests.
var (
	ParquetFile    = parquetFile
	HostileFooters = hostileFooters
)

// BuildFooter builds a valid footer with the given columns, row groups and rows.
func BuildFooter(columns, rowGroups int, rows int64) []byte {
	return buildFooter(footerSpec{columns: columns, rowGroups: rowGroups, rows: rows})
}

// BuildFooterKV builds a valid one-column footer with n key-value entries.
func BuildFooterKV(n int) []byte {
	return buildFooter(footerSpec{columns: 1, keyValues: n, valueLen: 4})
}

var AddRows = addRows

// BuildHeavyFooter builds a valid footer (15,000 row groups of 4 columns with statistics,
// about 1.8 MB) whose parse needs close to MaxFooterMemory.
func BuildHeavyFooter() []byte {
	return buildFooter(footerSpec{columns: 4, rowGroups: 15000, stats: true})
}
