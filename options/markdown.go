package options

import (
	"fmt"
	"strings"
)

// Markdown writes the documentation of set as a Markdown table (key, type,
// default, required, description), in declaration order, followed by a
// table of the refused keys and what to use instead. The option tables of
// docs/connectors.md are this text, so that they cannot drift from the declarations.
func Markdown(set *Set) string {
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Required | Description |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	groups := map[string][]string{}
	for _, o := range set.Options {
		if o.OneOf != "" {
			groups[o.OneOf] = append(groups[o.OneOf], o.Key)
		}
	}
	var refused []Option
	for _, o := range set.Options {
		if o.Refused != "" {
			refused = append(refused, o)
			continue
		}
		key := "`" + o.Key + "`"
		if len(o.Aliases) > 0 {
			key += " (also " + strings.Join(code(o.Aliases), ", ") + ")"
		}
		typ := o.Type.String()
		if o.Type == Enum {
			typ = strings.Join(code(o.Allowed), ", ")
		}
		if o.Type == Int {
			typ = strings.TrimPrefix(intRange(&o), "an ")
		}
		if o.Type == Float {
			typ = strings.TrimPrefix(floatRange(&o), "a ")
		}
		if o.Type == Duration || o.Type == MemorySize {
			typ += rangeSuffix(&o)
		}
		if o.Unit != "" {
			typ += ", in " + string(o.Unit)
		}
		if o.Secret {
			typ += " (secret)"
		}
		def := ""
		if o.Default != "" {
			def = "`" + o.Default + "`"
		}
		req := "no"
		switch {
		case o.OneOf != "":
			req = "one of " + strings.Join(code(groups[o.OneOf]), ", ")
		case o.Required:
			req = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(key), cell(typ), cell(def), cell(req), cell(o.Description))
	}
	if len(refused) > 0 {
		b.WriteString("\nKnown keys that are refused, and what to use instead:\n\n")
		b.WriteString("| Key | Instead |\n")
		b.WriteString("| --- | --- |\n")
		for _, o := range refused {
			fmt.Fprintf(&b, "| %s | %s |\n", cell("`"+o.Key+"`"), cell(o.Refused))
		}
	}
	return b.String()
}

func code(vals []string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		if v == "" {
			out[i] = "empty"
			continue
		}
		out[i] = "`" + v + "`"
	}
	return out
}

// cell keeps a value inside its table cell: a pipe would end the cell and a
// newline the row.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}
