// Package quorum holds raft's majority arithmetic, which the planner, the status and the
// PodDisruptionBudget all depend on.
package quorum

// Count is a number of voters.
type Count interface{ ~int | ~int32 }

// Of returns how many of n voters make a majority: the fewest that must be healthy for the
// cluster to elect a leader and commit writes.
func Of[T Count](voters T) T { return voters/2 + 1 }

// Tolerance returns how many of n voters may be down while a majority remains.
func Tolerance[T Count](voters T) T {
	if voters <= 0 {
		return 0
	}
	return voters - Of(voters)
}
