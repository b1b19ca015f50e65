// Package hash computes the hashes the operator stores on the objects it applies, so that drift
// is detected by comparing what was applied, not by deep-comparing objects the API server has
// defaulted.
package hash

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Of returns a short, stable hash of v's JSON encoding. encoding/json sorts map keys, so equal
// values always hash equally.
func Of(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only unsupported types (channels, funcs) fail; callers pass API structs.
		panic("hash.Of: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
