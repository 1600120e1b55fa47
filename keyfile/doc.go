// Package keyfile reads the key columns of Zerobus fallback files itself and writes them as
// one compact Parquet keys file, for the measurements by key (how many parked records the
// table already holds, verify --key after cleanup) that the SQL warehouse cannot make on the
// fallback files: they lie in a managed table's storage, which it may not read by path
// (LOCATION_OVERLAP). The keys file goes where the warehouse may read (a volume or an
// external location), and one statement compares it with the table.
//
// # What is read
//
// Read takes the files (Source: key, listed size, schema group, and the footer or its length
// when already known) and the key (Spec: the table's names and types of the key columns and,
// per schema group, where the files hold each one: the same name, another name for a renamed
// column, a column-mapping physical name col-…, or a path into a struct). Of each file it
// reads:
//
//   - the footer: nothing when the caller passes it; one ranged read of exactly the footer
//     and its 8-byte trailer when its length is known (inspect's File.FooterBytes); otherwise
//     one ranged read of the last 64 KiB (Options.TailSize) placed from the listed size, and
//     a second only when the footer is longer. The footer is checked as inspect checks it
//     (inspect.ReadFooter);
//   - for each row group, the byte ranges of the key column chunks and nothing else: one
//     ranged read per run of adjacent chunks (chunks separated by at most a tenth of their size
//     count as adjacent), none for a chunk inside the bytes of the footer read.
//
// Files are read Options.Concurrency at a time and each row group by itself: memory is bounded
// by the options (the key chunks of one row group per file being read, under
// Options.MaxBytesInFlight across files; a page under Options.MaxPageBytes; decoded keys in
// batches of Options.BatchRows; up to Options.FileBuffer of decoded keys held back per file),
// not by the number of files or rows.
//
// # Types
//
// Key columns are booleans, integers of every width (unsigned ones as Spark reads them:
// UINT8 as smallint, UINT16 as int, UINT32 as bigint, UINT64 as decimal(20,0)), decimals,
// strings (and JSON and ENUM strings), binaries, dates, timestamps (UTC-adjusted, INT96
// included, in microseconds) and timestamp_ntz. Each value is cast to the table's type when
// the cast is exact: integers to any integer, decimal or string type, decimals to a decimal
// of the same or a larger scale (those of scale 0 to integers), dates to timestamp_ntz,
// strings and binaries to each other. A value that does not fit the table's type is an error
// (as ANSI CAST makes it); a cast that would round, or need a session time zone, is refused
// before any column data of the file is read. A NULL key stays NULL: downstream, a key with a
// NULL column matches nothing and proves nothing (Counts counts such rows per file).
//
// # What is guaranteed
//
// Every row of every file is read, with the number of rows read equal to the footer's
// num_rows and every key column chunk holding exactly its row group's rows, or the file fails
// with an error that names it: a footer or page the Parquet library cannot read (its panics
// are contained and wrap inspect.ErrPanic), a key column the file lacks (ErrColumn), a type
// or value that does not cast (ErrCast), a count that does not match. A failed file does not
// stop the others; Read and Write then return a *FileErrors naming every failed file, with
// the full Result. A failed file's rows reach the sink, and the keys file, only when its
// decoded keys passed Options.FileBuffer before it failed (FileResult.Delivered counts them).
//
// # The keys file
//
// Write writes one Parquet file, streamed to an io.Writer, compressed with Zstd (or Snappy):
//
//	g   string not null   the file's schema group id (Source.Group)
//	f   string not null   the file, as Source.Key names it; dictionary-encoded
//	r   bigint not null   the row's ordinal within its file (0, 1, …), with Options.RowOrdinals
//	k0  <table type>      the first key column, cast to the table's type; NULL kept
//	k1  …                 the next key columns, in Spec.Columns order
//
// The footer's key-value entry MetaKey ("zbrecover.keys") holds Meta as JSON: the format
// version, the table's name and type of each key column, whether r is present, the number of
// rows and the order. Rows are not sorted by key (sorting would need memory or a spill in
// proportion to the rows; the warehouse joins by hash either way): the rows of one row group
// of a source are contiguous and in row order, and the row groups of different sources
// interleave in the order they were read (OrderByFile). Row groups of the keys file hold
// Options.RowGroupRows rows (1,048,576 by default). Open reads a keys file back (Scan, and
// Counts per file, with the rows that have a NULL key column), and Upload stores one
// create-only on a storage.Putter and returns its size and SHA-256 for the journal.
// OpenChecked reads a stored keys file back whole and opens it only when its size and SHA-256
// are the recorded ones (ErrChanged otherwise): a keys file that changed since it was stored
// proves nothing.
package keyfile
