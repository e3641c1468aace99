package structs

// Search contexts (Nomad's api/contexts): what a search looks through.
const (
	SearchJobs       = "jobs"
	SearchEvals      = "evals"
	SearchAllocs     = "allocs"
	SearchNodes      = "nodes"
	SearchNamespaces = "namespaces"
	SearchGroups     = "groups" // fuzzy only
	SearchTasks      = "tasks"  // fuzzy only
	SearchAll        = "all"
)

// SearchLimit is how many matches a search returns per context; past it
// the context's Truncations entry is true (Nomad's limit).
const SearchLimit = 20

// SearchMaxText bounds a search's prefix or text.
const SearchMaxText = 512

// RPC methods of search.
const (
	RPCSearchPrefix = "Search.PrefixSearch"
	RPCSearchFuzzy  = "Search.FuzzySearch"
)

// SearchRequest is a prefix search (Nomad's SearchRequest): IDs (names
// for namespaces) starting with Prefix in Context ("all" for every
// context the token may read), in the request's namespace ("*" for
// all).
type SearchRequest struct {
	Prefix  string
	Context string
	QueryOptions
}

// SearchResponse maps each context searched to its matching IDs, at
// most SearchLimit, and whether there were more.
type SearchResponse struct {
	Matches     map[string][]string
	Truncations map[string]bool
	QueryMeta
}

// FuzzySearchRequest is a fuzzy search (Nomad's FuzzySearchRequest):
// names containing Text, case-insensitively.
type FuzzySearchRequest struct {
	Text    string
	Context string
	QueryOptions
}

// FuzzyMatch is one fuzzy match: the object's name, and the IDs that
// scope it (namespace and job ID for a job, group or allocation; the
// node ID for a node).
type FuzzyMatch struct {
	ID    string
	Scope []string `json:",omitempty"`
}

// FuzzySearchResponse maps each context searched to its matches.
type FuzzySearchResponse struct {
	Matches     map[string][]FuzzyMatch
	Truncations map[string]bool
	QueryMeta
}
