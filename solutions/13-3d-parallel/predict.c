/* predict.c - lab 13, task (d): the modeled step time of a small 3D run
 * on a two-level topology (chapter 13, section 9). */
#include "threed.h"

#include <math.h>

dt_result lab_predict_step(const lab_step_work *w, int tp, int pp, int dp,
                           const dt_net_topo *topo, double *seconds)
{
    /* BEGIN STUDENT CODE */
    if (!w || !topo || !seconds)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_predict_step: NULL %s",
                       !w ? "work" : !topo ? "topology" : "seconds");
    if (tp < 1 || pp < 1 || dp < 1 || pp > w->layers || w->layers > LAB_MAX_LAYERS ||
        w->micro < 1 || tp * pp * dp > DT_SCHED_MAX_RANKS * 64)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_predict_step: tp %d pp %d dp %d, %d layers, "
                       "%d micro-batches", tp, pp, dp, w->layers, w->micro);
    /* rank 0's groups, w = (d P + p) T + t */
    int ranks[256], first[DT_SCHED_MAX_RANKS + 1];
    dt_net tl, dl;
    for (int i = 0; i < tp; i++)
        ranks[i] = i;
    DT_CHECK(dt_net_group_link(topo, ranks, tp, &tl));
    for (int i = 0; i < dp; i++)
        ranks[i] = i * tp * pp;
    DT_CHECK(dt_net_group_link(topo, ranks, dp, &dl));
    if (pp > DT_SCHED_MAX_RANKS)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_predict_step: pp %d", pp);
    dt_pipe_cut(w->layers, pp, first);
    /* one micro-batch on stage s: its layers' compute and TP allreduces */
    double sum = 0, slowest = 0, most = 0;
    for (int s = 0; s < pp; s++) {
        double c = 0, psi = 0;
        for (int l = first[s]; l < first[s + 1]; l++) {
            c += w->forward_s[l] + w->backward_s[l];
            if (tp > 1 && w->tp_calls[l] > 0) /* a ring's cost is linear in n */
                c += w->tp_calls[l] *
                     dt_net_ring_allreduce(&tl, w->tp_bytes[l] / w->tp_calls[l], tp);
            psi += w->params[l];
        }
        sum += c, slowest = fmax(slowest, c), most = fmax(most, psi);
    }
    /* 1F1B: the slowest stage m - 1 times, every stage once; the fill and
       the drain cross each boundary once each way, on that pair's link */
    double t = (w->micro - 1) * slowest + sum;
    for (int s = 1; s < pp; s++)
        t += 2 * dt_net_p2p(dt_net_topo_pair(topo, (s - 1) * tp, s * tp), w->act_bytes);
    t += dt_net_ring_allreduce(&dl, 4 * most, dp);
    *seconds = t;
    return DT_OK;
    /* END STUDENT CODE */
}
