-- cli_filter.lua: sbatch asks iosight when a job should start (Slurm's cli_filter/lua).
--
-- slurm.conf: CliFilterPlugins=cli_filter/lua, this file beside slurm.conf. A job opts in
-- by giving its run time alone and in bursts (seconds) in sbatch's environment:
--   IOSIGHT_MIN_TIME=850 IOSIGHT_MAX_TIME=4250 sbatch job.sh
-- and gets the --begin= that `iosight schedule start ... --format sbatch` prints. A job
-- with its own --begin is left alone; when iosight does not answer (10 s), the job is
-- submitted as asked. IOSIGHT_START_COMMAND overrides the command (the tests use it).

local COMMAND = os.getenv("IOSIGHT_START_COMMAND")
    or "iosight schedule start --warehouse /srv/iosight/wh --model logs-write --policy W2"

function slurm_cli_setup_defaults(options, early_pass)
    return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
    local min_time = tonumber(os.getenv("IOSIGHT_MIN_TIME") or "")
    local max_time = tonumber(os.getenv("IOSIGHT_MAX_TIME") or "")
    local own = options["begin"]  -- "Unknown" when unset (Slurm 22.05)
    local unset = own == nil or own == "" or own == "Unknown" or own == "0"
    if not (min_time and max_time and unset) then
        return slurm.SUCCESS
    end
    local pipe = io.popen(string.format(
        "timeout 10 %s --min-time %d --max-time %d --format sbatch 2>/dev/null",
        COMMAND, min_time, max_time))
    local line = pipe and pipe:read("*l")
    if pipe then pipe:close() end
    local begin = line and line:match("^%-%-begin=(%S+)$")
    if begin then
        options["begin"] = begin
        slurm.log_info("iosight: --begin=%s", begin)
    end
    return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, jobid, stepid)
    return slurm.SUCCESS
end
