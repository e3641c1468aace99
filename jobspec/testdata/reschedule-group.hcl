# A service group's reschedule block over the service default; another
# group without one keeps the default (null: the scheduler applies it).
job "web" {
  datacenters = ["dc1"]

  group "api" {
    reschedule {
      attempts  = 2
      interval  = "30m"
      delay     = "1m"
      unlimited = false
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["60"]
      }
    }
  }

  group "worker" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["60"]
      }
    }
  }
}
