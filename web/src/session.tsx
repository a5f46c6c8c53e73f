// Who is signed in, and in which workspace they act.
import { createContext, useCallback, useContext, useEffect, useState } from 'react'
import { ApiError, activeWorkspace, get, post, setActiveWorkspace, type Profile, type Workspace } from './api'

type Session = {
  me: Profile | null
  loading: boolean
  error: unknown // what kept the session from loading, other than being signed out
  workspaces: Workspace[]
  workspace: Workspace | null
  chooseWorkspace: (id: string) => void
  refresh: () => Promise<void>
  signOut: () => Promise<void>
}

const Ctx = createContext<Session | null>(null)

export function SessionProvider({ children }: { children: React.ReactNode }) {
  const [me, setMe] = useState<Profile | null>(null)
  const [loading, setLoading] = useState(true)
  const [workspaces, setWorkspaces] = useState<Workspace[]>([])
  const [error, setError] = useState<unknown>(null)
  const [wsID, setWsID] = useState(activeWorkspace())

  // Who is signed in and their workspaces; choosing a workspace needs no refetch.
  const refresh = useCallback(async () => {
    try {
      // Both at once: one round trip before the console can draw (the list
      // is refused, and ignored, for an account not approved yet).
      const listed = get('/api/workspaces').catch(() => null)
      const p = await get('/api/me')
      setMe(p)
      setError(null)
      if (p.approved) {
        const list = (await listed) ?? (await get('/api/workspaces')) ?? []
        setWorkspaces(list)
        const chosen = activeWorkspace()
        if (chosen && !list.some((w) => w.id === chosen)) {
          setActiveWorkspace('')
          setWsID('')
        }
      }
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) setMe(null)
      else setError(e)
    } finally {
      setLoading(false)
    }
  }, [])

  useEffect(() => {
    refresh()
  }, [refresh])

  const chooseWorkspace = (id: string) => {
    setActiveWorkspace(id)
    setWsID(id)
  }
  const signOut = async () => {
    await post('/api/auth/logout').catch(() => undefined)
    setMe(null)
    setWorkspaces([])
  }
  const workspace = workspaces.find((w) => w.id === wsID) ?? workspaces.find((w) => w.is_default) ?? workspaces[0] ?? null
  return <Ctx.Provider value={{ me, loading, error, workspaces, workspace, chooseWorkspace, refresh, signOut }}>{children}</Ctx.Provider>
}

export function useSession(): Session {
  const s = useContext(Ctx)
  if (!s) throw new Error('useSession outside SessionProvider')
  return s
}
