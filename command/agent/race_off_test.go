//go:build !race

package agent

// raceDetector is true in a -race build, where each request costs about
// ten times as much.
const raceDetector = false
