/* rendezvous: the check that the MASTER_ADDR:MASTER_PORT a plan hands out really works across
 * nodes, as torch.distributed's TCPStore uses it. Rank 0 listens on MASTER_ADDR itself (so the
 * address must be one of rank 0's node) and waits for every other rank; each other rank
 * connects, says "RANK HOST", and waits for rank 0's "ack". Prints one RDV line; exit 0 only if
 * the whole exchange happened within 30 seconds. Environment: RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT. Built by tests/multinode.rs with cc. */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *need(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "rendezvous: %s is not set\n", name);
        exit(2);
    }
    return v;
}

int main(void) {
    int rank = atoi(need("RANK")), world = atoi(need("WORLD_SIZE"));
    const char *addr = need("MASTER_ADDR"), *port = need("MASTER_PORT");
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    alarm(30);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(addr, port, &hints, &ai);
    if (rc) {
        fprintf(stderr, "rendezvous: rank %d cannot resolve %s: %s\n", rank, addr, gai_strerror(rc));
        return 1;
    }
    if (rank == 0) {
        int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(s, ai->ai_addr, ai->ai_addrlen) || listen(s, world)) {
            fprintf(stderr, "rendezvous: rank 0 on %s cannot listen on %s:%s: ", host, addr, port);
            perror("");
            return 1;
        }
        char heard[4096] = "";
        for (int i = 1; i < world; i++) {
            int c = accept(s, NULL, NULL);
            char line[300] = "";
            ssize_t n = c < 0 ? -1 : read(c, line, sizeof line - 1);
            if (n <= 0) {
                perror("rendezvous: rank 0 accept/read");
                return 1;
            }
            line[strcspn(line, "\n")] = 0;
            if (write(c, "ack\n", 4) != 4) return 1;
            close(c);
            snprintf(heard + strlen(heard), sizeof heard - strlen(heard), "%s%s", i > 1 ? "," : "", line);
        }
        printf("RDV 0 %s listened %s:%s heard %s\n", host, addr, port, heard);
        return 0;
    }
    for (;;) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(c, ai->ai_addr, ai->ai_addrlen) == 0) {
            char line[300], reply[16] = "";
            int len = snprintf(line, sizeof line, "%d@%s\n", rank, host);
            if (write(c, line, len) != len || read(c, reply, sizeof reply - 1) <= 0) return 1;
            reply[strcspn(reply, "\n")] = 0;
            printf("RDV %d %s connected %s:%s got %s\n", rank, host, addr, port, reply);
            return strcmp(reply, "ack") != 0;
        }
        close(c);
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}
