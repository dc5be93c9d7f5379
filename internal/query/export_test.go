package query

// SetBeforeViews makes createViews call fn first (nil: nothing), so a
// test can swap the history between reading the manifest and making the
// views over the files it lists.
func SetBeforeViews(fn func()) { beforeViews = fn }
