# Update strategies: the job's block applies to every group, a group's
# block overrides it field by field.
job "rolling" {
  datacenters = ["dc1"]

  update {
    max_parallel     = 2
    stagger          = "10s"
    min_healthy_time = "30s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  # Inherits the job's strategy as is.
  group "inherit" {
    count = 4
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
    }
  }

  # Overrides two fields; the rest comes from the job's block.
  group "override" {
    update {
      max_parallel      = 0
      progress_deadline = "20m"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
    }
  }
}
