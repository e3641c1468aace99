package structs

// Version is Drover's version, reported by the agent and the CLI.
const Version = "0.1.0-dev"
