package ui

// SetCompareMaxLog sets the largest log the compare page reads, for the
// test of that bound, and returns the previous one.
func SetCompareMaxLog(n int64) int64 {
	old := compareMaxLog
	compareMaxLog = n
	return old
}
