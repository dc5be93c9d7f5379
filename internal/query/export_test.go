package query

// SetBeforeViews makes createViews call fn first (nil: nothing), so a
// test can swap the history between reading the manifest and making the
// views over the files it lists.
func SetBeforeViews(fn func()) { beforeViews = fn }

// FoldOnly makes d fold every session's events instead of reading the
// history files' summaries (before its first query of a derived view).
func FoldOnly(d *DB) { d.foldOnly = true }
