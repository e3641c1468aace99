job "echo" {
  type        = "batch"
  datacenters = ["dc1"]

  group "g" {
    task "echo" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo $NVIDIA_VISIBLE_DEVICES ${NOMAD_TASK_NAME} in ${ NOMAD_ALLOC_ID }"]
        escaped = "literal $${not_interpolated} and \"quotes\"\ttab"
        script  = <<EOT
#!/bin/sh
echo "${NOMAD_ALLOC_DIR}/${NOMAD_TASK_NAME}"
EOT
        ratio   = 0.5
        verbose = true
        nested = {
          list = [1, 2.5, "${attr.unique.hostname}"]
          "dotted.key" = "${meta.rack}x${node.class}"
        }
        mount {
          source = "/data"
          target = "/mnt/${NOMAD_JOB_NAME}"
        }
        mount {
          source = "/scratch"
        }
        port "http" {
          static = 8080
        }
      }

      env {
        GPU_IDS   = "${NOMAD_ALLOC_ID}-${device.ids}"
        PLAIN     = "plain"
        CUDA_HOME = "/usr/local/cuda"
      }

      constraint {
        attribute = "${attr.driver.raw_exec}"
        operator  = "is_set"
      }
    }
  }
}
