//go:build race

package ui_test

// raceOn: the race detector slows the server several times, so timing
// measures skip.
const raceOn = true
