/* message.c - the time of one message, with both ends' ports: THE RULE of
 * dt/net.h, step by step. The communicator's messages (lib/comm/port.c) and
 * its shortcuts' replays (lib/comm/replay.c) both call these, so that a
 * figure is computed by one piece of code whichever path a call takes. */
#include "dt/net.h"

#include <math.h>

double dt_net_wire(const dt_net *link, double bytes)
{
    return isinf(link->beta) ? 0.0 : bytes / link->beta;
}

double dt_net_reduce_time(const dt_net *link, double bytes)
{
    return link->gamma * bytes;
}

static int rendezvous(double bytes)
{
    return bytes > DT_NET_EAGER_MAX;
}

/* Step 1: d = max(t_send, send_free); send_free = d + w. */
double dt_net_depart(const dt_net *link, dt_net_ports *sender, double t_send, double bytes)
{
    double d = fmax(t_send, sender->send_free);
    sender->send_free = d + dt_net_wire(link, bytes);
    return d;
}

/* Step 5: the send completes at d' + w, d' = max(d, t_posted) above the
 * eager limit, d otherwise. */
double dt_net_sent(const dt_net *link, double depart, double t_posted, double bytes)
{
    double d = rendezvous(bytes) ? fmax(depart, t_posted) : depart;
    return d + dt_net_wire(link, bytes);
}

/* Steps 2 to 4: s = max(d', recv_free); recv_free = s + w; arrival
 * s + alpha + w. */
double dt_net_arrive(const dt_net *link, dt_net_ports *receiver, double depart,
                     double t_posted, double bytes)
{
    double d = rendezvous(bytes) ? fmax(depart, t_posted) : depart;
    double s = fmax(d, receiver->recv_free), w = dt_net_wire(link, bytes);
    receiver->recv_free = s + w;
    return s + link->alpha + w;
}
