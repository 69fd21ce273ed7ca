package query

// This file holds the numeric functions.

func init() {
	register(
		&funcDef{name: "MOD", args: []argKind{exactArg, exactArg},
			desc: "the remainder of dividing the first argument by the second, with the sign of the first",
			build: func(_ *planner, args []node, src string) (node, error) {
				return arithOf("%", args[0], args[1], src)
			}},
	)
}
