# A one-node Slurm in a temporary directory, for tests/slurm/run (sourced): munge and Slurm's controller and node
# daemon started by process id, with their own socket, ports, state and logs, so nothing of the machine's own
# /etc/munge or /etc/slurm is used or changed; `cluster_stop` ends exactly the processes `cluster_start` began.
#   cluster_start DIR   starts the daemons (SLURM_CONF is exported for sbatch, squeue, scancel, sinfo)
#   cluster_stop        stops them
cluster_pids=()

cluster_start() {
  local dir=$1 host
  host=$(hostname -s)
  mkdir -p "$dir"/{munge,state,spool,log}
  chmod 711 "$dir"/munge   # munged wants its socket directory searchable by all
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --force --foreground --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" \
    >"$dir/log/munged.out" 2>&1 &
  cluster_pids+=($!)
  # Ports away from a machine's own Slurm (6817, 6818).
  cat > "$dir/slurm.conf" <<CONF
ClusterName=dtsim-test
SlurmctldHost=$host
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_min_interval=0
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
PluginDir=/usr/lib/x86_64-linux-gnu/slurm-wlm
NodeName=$host CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$dir/slurm.conf"
  local i
  for i in $(seq 50); do [ -S "$dir/munge/munge.socket" ] && break; sleep 0.1; done
  slurmctld -D -c -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
  cluster_pids+=($!)
  slurmd -D -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 &
  cluster_pids+=($!)
  for i in $(seq 100); do
    sinfo -h -o '%T' 2>/dev/null | grep -qx idle && return 0
    sleep 0.2
  done
  echo "slurm: the node did not come up; logs in $dir/log" >&2
  return 1
}

cluster_stop() {
  local pid i
  # Jobs still running (a check that failed half-way) are cancelled first, so none outlives the daemons.
  if [ ${#cluster_pids[@]} -gt 0 ] && scancel --user=root 2>/dev/null; then
    for i in $(seq 100); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  for pid in "${cluster_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${cluster_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  cluster_pids=()
}
