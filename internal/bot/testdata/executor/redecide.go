package bot

import "github.com/backflow-dev/backflow/internal/lifecycle"

// redecide is an executor method that asks the lifecycle's rules again in
// the middle of a chain, which the executor must not: the test holding the
// executor to its allow-list of lifecycle methods finds both calls, the
// second although an effect's method of the same name is allowed.
func (x *executor) redecide(in *lifecycle.Input, u *lifecycle.Unit) []lifecycle.Effect {
	chain := in.Chain(u, nil)
	if in.BaseMoved(x.head, x.merges) {
		return nil
	}
	return chain
}
