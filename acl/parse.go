package acl

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Bounds on policy rules, checked before the rules are decoded.
const (
	// MaxRulesSize is the longest rules Parse accepts, in bytes.
	MaxRulesSize = 64 << 10
	// MaxRuleBlocks is the most blocks (nested ones included) rules may
	// have.
	MaxRuleBlocks = 1000
	// maxNesting bounds how deep brackets, braces and quotes may nest, so
	// that the recursive-descent HCL parser stays shallow. A real policy
	// nests at most five deep (namespace, variables, path, list, string).
	maxNesting = 32
)

// Parse parses policy rules in Nomad's HCL policy language. filename is
// used in error positions only. On failure the error is an Errors value,
// one line per problem: "policy.hcl:3,19: namespace "a": unknown
// capability "submit-jobz"".
func Parse(filename, rules string) (*Policy, error) {
	if len(rules) > MaxRulesSize {
		return nil, Errors{{Filename: filename, Msg: fmt.Sprintf("rules are %d bytes; the limit is %d bytes (MaxRulesSize)", len(rules), MaxRulesSize)}}
	}
	src := []byte(rules)
	if err := checkTokens(filename, src); err != nil {
		return nil, err
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		var es Errors
		es.addDiags(filename, diags)
		return nil, es.sorted()
	}
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return nil, Errors{{Filename: filename, Msg: fmt.Sprintf("unexpected HCL body %T", file.Body)}}
	}
	if b := blockOverLimit(body); b != nil {
		var es Errors
		es.add(filename, b.TypeRange, "more than %d rule blocks (MaxRuleBlocks)", MaxRuleBlocks)
		return nil, es
	}
	d := &decoder{filename: filename}
	p := d.policy(body)
	if err := d.errs.sorted(); err != nil {
		return nil, err
	}
	p.Raw = rules
	return p, nil
}

// checkTokens lexes src (the lexer does not recurse) and refuses what
// could make the parser or the evaluator recurse deeply: nesting deeper
// than maxNesting, and expression syntax, which a policy never needs.
func checkTokens(filename string, src []byte) error {
	tokens, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	var es Errors
	depth := 0
	for _, tok := range tokens {
		switch tok.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			depth++
			if depth > maxNesting {
				es.add(filename, tok.Range, "nested deeper than %d levels", maxNesting)
				return es
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			depth = max(depth-1, 0)
		case hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			es.add(filename, tok.Range, "unexpected %q: policy values are literal strings; write $${ or %%%%{ for a literal ${ or %%{", tok.Bytes)
			return es
		case hclsyntax.TokenStar, hclsyntax.TokenSlash, hclsyntax.TokenPlus, hclsyntax.TokenMinus,
			hclsyntax.TokenPercent, hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual,
			hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq, hclsyntax.TokenGreaterThan,
			hclsyntax.TokenGreaterThanEq, hclsyntax.TokenAnd, hclsyntax.TokenOr, hclsyntax.TokenBang,
			hclsyntax.TokenDot, hclsyntax.TokenDoubleColon, hclsyntax.TokenEllipsis,
			hclsyntax.TokenFatArrow, hclsyntax.TokenQuestion, hclsyntax.TokenColon:
			es.add(filename, tok.Range, "unexpected %q: policy values are strings and lists of strings, not expressions", tok.Bytes)
			return es
		}
	}
	return nil
}

// blockOverLimit returns the first block beyond MaxRuleBlocks, counting
// nested blocks too, or nil. checkTokens has bounded the nesting.
func blockOverLimit(body *hclsyntax.Body) *hclsyntax.Block {
	n := 0
	var walk func(*hclsyntax.Body) *hclsyntax.Block
	walk = func(body *hclsyntax.Body) *hclsyntax.Block {
		for _, b := range body.Blocks {
			if n++; n > MaxRuleBlocks {
				return b
			}
			if over := walk(b.Body); over != nil {
				return over
			}
		}
		return nil
	}
	return walk(body)
}
