# Added to -dev: a host volume that jobs may mount by name
# (README: Host volumes). The path must be an existing directory.
client {
  host_volume "scratch" {
    path      = "/tmp"
    read_only = false
  }
}
