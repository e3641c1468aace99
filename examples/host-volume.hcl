# Mounts the client's host volume "scratch" (README: Host volumes). Needs an
# agent started with -config examples/agent/host-volume.hcl.
job "scratch" {
  datacenters = ["dc1"]
  type        = "batch"

  group "g" {
    volume "scratch" {
      type      = "host"
      source    = "scratch"   # the client's host_volume name
      read_only = false
    }

    task "t" {
      driver = "raw_exec"
      volume_mount {
        volume      = "scratch"
        destination = "scratch"   # raw_exec: a link at ./scratch in the task dir
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello > scratch/drover-scratch-$NOMAD_ALLOC_ID && ls scratch/ | grep -c drover-scratch"]
      }
    }
  }
}
