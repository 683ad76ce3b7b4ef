# R as the oracle of rr's seed components (tests/test_r_oracle.py runs it): for each CSV named on the command
# line (columns init, data, y), lme4's REML fit of the crossed random-effects model y ~ 1 + (1 | init) +
# (1 | data), its variance components and intercept written as JSON to the last argument.
suppressMessages({library(lme4); library(jsonlite)})
ctl <- lmerControl(optimizer = "nloptwrap", calc.derivs = FALSE, check.conv.singular = "ignore",
                   optCtrl = list(xtol_abs = 1e-14, ftol_abs = 1e-16, xtol_rel = 1e-14, maxeval = 1e5))
args <- commandArgs(trailingOnly = TRUE)
res <- lapply(head(args, -1), function(f) {
  d <- read.csv(f)
  d$init <- factor(d$init)
  d$data <- factor(d$data)
  m <- suppressWarnings(lmer(y ~ 1 + (1 | init) + (1 | data), data = d, REML = TRUE, control = ctl))
  v <- as.data.frame(VarCorr(m))
  list(init_var = v$vcov[v$grp == "init"], data_var = v$vcov[v$grp == "data"],
       resid_var = v$vcov[v$grp == "Residual"], mean = unname(fixef(m)[1]))
})
writeLines(toJSON(res, auto_unbox = TRUE, digits = NA), tail(args, 1))
