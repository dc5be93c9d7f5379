//go:build !race

package ui_test

const raceOn = false
