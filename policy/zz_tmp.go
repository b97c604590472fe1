package policy

type Kind string

const (
	KindTool     Kind = ""
	KindResource Kind = "resource"
	KindPrompt   Kind = "prompt"
)
