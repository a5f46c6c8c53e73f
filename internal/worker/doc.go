// Package worker is the worker side of execution (DESIGN §5): the worker
// that claims work through the worker port (package workport), prepares
// the repository, runs the agent or script in an execution backend,
// streams its events and publishes the result. The same worker runs in
// the hub (`slipway serve`, calling the dispatcher in process) and in a
// remote runner (`slipway runner`, calling it over HTTPS).
//
// Names, paired: worker (this package) does the work; dispatch is the
// hub's side of the port that hands it out; runner is the remote program
// that hosts a worker away from the hub; runners is the hub's registry of
// those programs and the runner API they call.
package worker
