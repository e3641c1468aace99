package jobspec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// CheckHCLDepth refuses HCL src that nests deeper than maxDepth, at the
// first token too deep, before the recursive parser sees it. hclsyntax
// recurses once per nested block, list, object, parenthesis or template,
// and also once per operator of a chain ("- - - 1" when parsing,
// "1 + 1 + 1" when evaluating, "a ? b : c ? d : e" both): a deep enough
// file exhausts the stack, which is fatal, not a recoverable panic. So an
// operator counts as one more level until the expression ends (a comma,
// or a newline where newlines end an item). The lexer does not recurse.
// Every HCL reader of outside input calls it (job files, the agent
// config).
func CheckHCLDepth(filename string, src []byte, maxDepth int) error {
	tokens, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	return checkTokenDepth(filename, tokens, maxDepth)
}

// defaultTemplateDepth bounds the nesting of templatefile() templates.
const defaultTemplateDepth = 64

// CheckTemplateDepth is CheckHCLDepth for an HCL string template (the
// files templatefile() renders).
func CheckTemplateDepth(filename string, src []byte, maxDepth int) error {
	tokens, _ := hclsyntax.LexTemplate(src, filename, hcl.InitialPos)
	return checkTokenDepth(filename, tokens, maxDepth)
}

func checkTokenDepth(filename string, tokens hclsyntax.Tokens, maxDepth int) error {
	type level struct {
		opener hclsyntax.TokenType
		ops    int // operators in the expression being read at this level
	}
	levels := []level{{opener: hclsyntax.TokenOBrace}}
	tooDeep := func(tok hclsyntax.Token, what string) error {
		return Errors{{Filename: filename, Line: tok.Range.Start.Line, Column: tok.Range.Start.Column, Summary: "Nested too deep",
			Detail: fmt.Sprintf("%s nest deeper than the limit %d (limits.hcl_max_depth)", what, maxDepth)}}
	}
	for _, tok := range tokens {
		top := &levels[len(levels)-1]
		switch tok.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			levels = append(levels, level{opener: tok.Type})
			if len(levels)-1+top.ops > maxDepth {
				return tooDeep(tok, "blocks, lists, objects, parentheses and templates")
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			if len(levels) > 1 {
				levels = levels[:len(levels)-1]
			}
		case hclsyntax.TokenComma:
			top.ops = 0
		case hclsyntax.TokenNewline:
			// Inside parentheses and brackets an expression goes on
			// across lines; in a body or an object a newline ends it.
			if top.opener == hclsyntax.TokenOBrace {
				top.ops = 0
			}
		case hclsyntax.TokenPlus, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenSlash, hclsyntax.TokenPercent,
			hclsyntax.TokenAnd, hclsyntax.TokenOr, hclsyntax.TokenBang, hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual,
			hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq, hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq,
			hclsyntax.TokenQuestion:
			if top.ops++; len(levels)-1+top.ops > maxDepth {
				return tooDeep(tok, "operators chained in one expression, with the blocks around them,")
			}
		}
	}
	return nil
}
