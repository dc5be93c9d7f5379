package history

import "slices"

// SortSegment puts rows in the order compaction writes a segment's rows
// (kind, then session, then seq; see Compact), so that a segment made
// elsewhere (package remote) lets DuckDB skip row groups as local ones do.
func SortSegment(rows []Row) { slices.SortFunc(rows, segmentOrder) }
