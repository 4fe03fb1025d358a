//go:build !linux

package server

// Event loops serve connections on Linux only (loop_linux.go); elsewhere
// a goroutine serves each.

// useLoops has no effect here.
var useLoops = false

// loopConn is the event loop's part of a connection, which has none here.
type loopConn struct{}

// loop is an event loop, of which there are none here.
type loop struct{}

func (s *Server) startLoops()          {}
func (s *Server) stopLoops()           {}
func (s *Server) wakeLoops(force bool) {}
func (s *Server) toLoop(*client) bool  { return false }
func (c *client) addToLoop()           {}
func (c *client) closeLoopConn()       {}
