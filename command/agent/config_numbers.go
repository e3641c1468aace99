package agent

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// maxNumberExponent bounds the exponent of a number literal in the agent
// config. HCL numbers are arbitrary-precision, and gohcl turns a number
// into a string by printing every digit: "name = 1e-100000" took 4 s,
// "1e-99999999" would take days. No setting needs more than float64's
// range.
const maxNumberExponent = 400

// checkNumbers refuses number literals whose exponent is beyond
// maxNumberExponent, at the literal's position. The lexer does not
// recurse or evaluate.
func checkNumbers(filename string, src []byte) error {
	tokens, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	for _, tok := range tokens {
		if tok.Type != hclsyntax.TokenNumberLit {
			continue
		}
		lit := string(tok.Bytes)
		i := strings.IndexAny(lit, "eE")
		if i < 0 {
			continue
		}
		exp, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
		if err != nil || exp > maxNumberExponent || exp < -maxNumberExponent {
			return fmt.Errorf("%s:%d,%d: number %.40s: exponent beyond ±%d", filename, tok.Range.Start.Line, tok.Range.Start.Column,
				lit, maxNumberExponent)
		}
	}
	return nil
}
