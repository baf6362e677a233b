/* quorum.c - lab 14, task 5: a step of a replica group that trains on
 * through a failure and takes a healed replica back from a live peer
 * (chapter 14, section 8). */
#include "ft.h"

dt_result lab_quorum_step(lab_replica *q, const int *alive)
{
    /* BEGIN STUDENT CODE */
    /* What: one step of the replica group with the alive replicas as its
     * quorum (ft.h).
     * Postcondition: every alive replica holds the state of the replicas
     * that trained through the failure, stepped by the mean of the quorum's
     * gradients, its size the alive replicas only (section 8); or
     * DT_ERR_PEER_DIED when no live replica holds the state. */
    (void)q, (void)alive;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
