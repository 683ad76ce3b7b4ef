# R as a test oracle for rr's statistics (tests/test_r_oracle.py runs it): for each sweep CSV named on the
# command line, lmerTest's per-size mixed model, the size-deviation emergence model (Satterthwaite and
# Kenward-Roger) and metafor's Knapp-Hartung meta-regression with its predictions (predict.rma), and per
# (size, steps) cell on log10 N and log10 D/N together (the sweep's ref_params column gives N), written as
# JSON to the last argument. A file of several budgets gets the two-moderator fit only.
# Rules that decide which terms exist mirror rr's own: sizes with Review runs; a slope for a baseline at 2+
# of them, a random size deviation at 3+; a meta-regression over sizes with 2+ seed pairs and unequal
# differences, when there are 3+ such sizes.
suppressMessages({library(lmerTest); library(metafor); library(jsonlite)})
ref <- "review_neutral"
ctl <- lmerControl(optimizer = "nloptwrap", calc.derivs = FALSE, check.conv.singular = "ignore",
                   optCtrl = list(xtol_abs = 1e-14, ftol_abs = 1e-16, xtol_rel = 1e-14, maxeval = 1e5))
coefs <- function(m, terms, ddf) {
  s <- summary(m, ddf = ddf)$coefficients
  lapply(setNames(terms, terms), function(t) as.list(s[t, c(1, 2, 3, 5)]))
}
per_size <- function(d) {
  out <- list()
  for (s in unique(d$size[d$variant == ref])) {
    g <- d[d$size == s, ]
    g$variant <- relevel(factor(g$variant), ref)
    if (nrow(g) - nlevels(g$variant) < 1 || max(table(g$seed)) < 2) next
    m <- suppressWarnings(lmer(val_loss ~ variant + (1 | seed), data = g, REML = TRUE, control = ctl))
    terms <- setdiff(rownames(summary(m)$coefficients), "(Intercept)")
    out[[s]] <- coefs(m, terms, "Satterthwaite")
  }
  out
}
deviation <- function(d, ahead = NULL) {  # ahead: centre lx that far past the largest size instead
  sizes <- unique(d$size[d$variant == ref])
  d <- d[d$size %in% sizes, ]
  lx <- tapply(log10(d$params_M[d$variant == ref]) + 6, d$size[d$variant == ref], mean)
  centre <- if (is.null(ahead)) mean(lx) else max(lx) + ahead
  d$lxc <- lx[d$size] - centre
  d$block <- paste(d$size, d$seed)
  base <- setdiff(unique(d$variant), ref)
  at <- sapply(base, function(v) length(unique(d$size[d$variant == v])))
  for (v in base) d[[v]] <- as.numeric(d$variant == v)
  varied <- base[at >= 3]
  if (length(varied) == 0) return(NULL)
  rhs <- c("0 + size", base, paste0(base[at >= 2], ":lxc"), "(1 | block)", sprintf("(0 + %s | size)", varied))
  m <- suppressWarnings(lmer(as.formula(paste("val_loss ~", paste(rhs, collapse = " + "))), data = d,
                             REML = TRUE, control = ctl))
  if (!is.null(ahead)) {  # the indicators are then each baseline's gap there: (b) with KR, (a) with Satterthwaite
    a <- suppressWarnings(lmer(as.formula(paste("val_loss ~", paste(head(rhs, -length(varied)), collapse = " + "))),
                               data = d, REML = TRUE, control = ctl))
    return(list(x = centre, kr = coefs(m, varied, "Kenward-Roger"),
                run = coefs(a, base[at >= 2], "Satterthwaite")))
  }
  terms <- paste0(varied, ":lxc")
  list(satterthwaite = coefs(m, terms, "Satterthwaite"), kr = coefs(m, terms, "Kenward-Roger"),
       theta = setNames(as.list(getME(m, "theta")), c("seed", varied)), sigma2 = sigma(m)^2)
}
meta <- function(d) {  # the fits, and metafor's predictions from each
  out <- list()
  fc <- list()
  for (v in setdiff(unique(d$variant), ref)) {
    rows <- NULL
    for (s in unique(d$size[d$variant == ref])) {
      r <- d[d$size == s & d$variant == ref, ]
      m <- merge(d[d$size == s & d$variant == v, ], r, by = "seed")
      dd <- m$val_loss.x - m$val_loss.y
      if (length(dd) >= 2 && sd(dd) > 1e-12 * max(abs(mean(dd)), 1e-12))
        rows <- rbind(rows, c(mean(dd), sd(dd) / sqrt(length(dd)), log10(r$params_M[1]) + 6))
    }
    if (is.null(rows) || nrow(rows) < 3) next
    f <- rma(rows[, 1], sei = rows[, 2], mods = ~ rows[, 3], method = "REML", test = "knha",
             control = list(threshold = 1e-14, maxiter = 10000, stepadj = 0.5))
    out[[v]] <- list(slope = f$b[2], se = f$se[2], p = f$pval[2], tau2 = f$tau2, qe = f$QE, qe_p = f$QEp)
    # forecasts a quarter and a whole decade past the largest size, as rr's forecast view computes them
    x_new <- max(rows[, 3]) + c(0.25, 1)
    p <- predict(f, newmods = x_new)
    fc[[v]] <- list(x = x_new, pred = p$pred, se = p$se, ci_low = p$ci.lb, ci_high = p$ci.ub,
                     pi_low = p$pi.lb, pi_high = p$pi.ub)
  }
  list(fits = out, forecast = fc)
}
meta2 <- function(d) {  # issue 44: each (size, steps) cell's paired gap on log10 N and log10 D/N together
  if (is.null(d$ref_params)) return(list())
  out <- list()
  cells <- unique(d[d$variant == ref, c("size", "steps")])
  for (v in setdiff(unique(d$variant), ref)) {
    rows <- NULL
    for (i in seq_len(nrow(cells))) {
      at <- d$size == cells$size[i] & d$steps == cells$steps[i]
      r <- d[at & d$variant == ref, ]
      m <- merge(d[at & d$variant == v, ], r, by = "seed")
      dd <- m$val_loss.x - m$val_loss.y
      n <- r$ref_params[1]  # the reference's exact parameter count, as rr counts it (rr_core.shapes)
      if (length(dd) >= 2 && sd(dd) > 1e-12 * max(abs(mean(dd)), 1e-12))
        rows <- rbind(rows, c(mean(dd), sd(dd) / sqrt(length(dd)), log10(n),
                              log10(cells$steps[i] * 64 * 256 / n)))
    }
    if (is.null(rows) || nrow(rows) < 4 || qr(cbind(1, rows[, 3:4]))$rank < 3) next
    yi <- rows[, 1]; sei <- rows[, 2]; lN <- rows[, 3]; lDN <- rows[, 4]
    f <- rma(yi, sei = sei, mods = ~ lN + lDN, method = "REML", test = "knha",
             control = list(threshold = 1e-14, maxiter = 10000, stepadj = 0.5))
    x_new <- c(max(lN) + 0.5, log10(20))  # half a decade past the largest size, at 20 tokens per parameter
    p <- predict(f, newmods = rbind(x_new))
    out[[v]] <- list(size_slope = f$b[2], size_se = f$se[2], size_p = f$pval[2], dn_slope = f$b[3],
                     dn_se = f$se[3], dn_p = f$pval[3], tau2 = f$tau2, qe = f$QE, qe_p = f$QEp,
                     forecast = list(x = x_new, pred = p$pred, se = p$se, ci_low = p$ci.lb, ci_high = p$ci.ub,
                                     pi_low = p$pi.lb, pi_high = p$pi.ub))
  }
  out
}
args <- commandArgs(trailingOnly = TRUE)
files <- head(args, -1)
res <- lapply(files, function(f) {
  d <- read.csv(f, stringsAsFactors = FALSE)
  d$size <- as.character(d$size)
  if (length(unique(paste(d$size, d$variant, d$seed))) < nrow(d))  # several budgets: the two-moderator fit only
    return(list(meta2 = meta2(d)))
  m <- meta(d)
  list(mixed = per_size(d), deviation = deviation(d), meta = m$fits, forecast = m$forecast,
       forecast_models = deviation(d, ahead = 0.25), meta2 = meta2(d))
})
writeLines(toJSON(res, auto_unbox = TRUE, digits = NA, null = "null", na = "null"), tail(args, 1))
